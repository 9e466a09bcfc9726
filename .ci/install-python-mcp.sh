#!/usr/bin/env bash
# Installs the official Python MCP SDK (the `mcp` package from PyPI, at the pinned version) into
# a virtual environment at .ci/python-mcp/venv, whose client the MCP server tests connect with
# over stdio and streamable HTTP. Idempotent: a matching install is left as it is.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/python-mcp/venv"
version="2.3.0"

if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv --help >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        apt-get update -qq && apt-get install -y -qq python3 python3-venv >/dev/null
    else
        echo "install-python-mcp: python3 with the venv module is required" >&2
        exit 1
    fi
fi

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "
import importlib.metadata, sys
sys.exit(importlib.metadata.version('mcp') != '$version')" 2>/dev/null; then
    echo "install-python-mcp: mcp $version already installed"
    exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$version"
echo "install-python-mcp: installed mcp $version into $venv"

#!/usr/bin/env bash
# Installs the reference MCP servers the harnessx MCP tests run against, from the npm registry,
# at the versions pinned in .ci/mcp-servers/package-lock.json, into .ci/mcp-servers/node_modules.
# Idempotent: a matching install is left as it is.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="$here/mcp-servers"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
    else
        echo "install-mcp-servers: node and npm are required" >&2
        exit 1
    fi
fi

marker="$dir/node_modules/.package-lock.json"
if [ -f "$marker" ] && cmp -s <(sed -n '/"packages"/,$p' "$dir/package-lock.json" | grep -E '"(version|resolved)"') \
                             <(sed -n '/"packages"/,$p' "$marker" | grep -E '"(version|resolved)"'); then
    echo "install-mcp-servers: already installed"
else
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
fi

for pkg in server-everything server-filesystem server-memory; do
    test -f "$dir/node_modules/@modelcontextprotocol/$pkg/dist/index.js" || {
        echo "install-mcp-servers: @modelcontextprotocol/$pkg is missing after install" >&2
        exit 1
    }
done
echo "install-mcp-servers: $(node --version), servers in $dir/node_modules/@modelcontextprotocol"

#!/usr/bin/env bash
# Installs the reference MCP servers the harnessx MCP tests run against, and the official
# TypeScript SDK (@modelcontextprotocol/sdk) whose client the MCP server tests connect with,
# from the npm registry,
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
# The lockfile pins versions and integrity hashes (no registry URLs: npm uses the configured
# registry). Reinstall unless the installed tree holds exactly the pinned versions.
same_tree() {
    [ -f "$marker" ] && node -e '
        const pins = (f) => Object.entries(require(f).packages)
            .filter(([path]) => path).map(([path, p]) => path + "@" + p.version).sort().join("\n");
        process.exit(pins(process.argv[1]) === pins(process.argv[2]) ? 0 : 1);
    ' "$dir/package-lock.json" "$marker"
}
servers_present() {
    for pkg in server-everything server-filesystem server-memory; do
        [ -f "$dir/node_modules/@modelcontextprotocol/$pkg/dist/index.js" ] || return 1
    done
    [ -f "$dir/node_modules/@modelcontextprotocol/sdk/dist/cjs/client/index.js" ]
}
if same_tree && servers_present; then
    echo "install-mcp-servers: already installed"
else
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
fi

if ! servers_present; then
    echo "install-mcp-servers: a server is missing after the install" >&2
    exit 1
fi
echo "install-mcp-servers: $(node --version), servers and the SDK in $dir/node_modules/@modelcontextprotocol"

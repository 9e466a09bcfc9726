#!/usr/bin/env bash
# Installs what the console's browser tests need: Debian's `chromium` (when /usr/bin/chromium is
# missing), node and npm, and `playwright-core` at the version pinned in
# harnessx-server/tests/browser/package-lock.json, into that folder's node_modules.
# Idempotent: a matching install is left as it is. Playwright downloads no browser of its own.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="$here/../harnessx-server/tests/browser"
export DEBIAN_FRONTEND=noninteractive

need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
if [ "${#need[@]}" -gt 0 ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        apt-get install -y -qq "${need[@]}" >/dev/null
    else
        echo "install-browser: ${need[*]} missing and apt-get is not usable here" >&2
        exit 1
    fi
fi

pinned="$(node -p 'require(process.argv[1]).packages["node_modules/playwright-core"].version' "$dir/package-lock.json")"
installed="$(node -p 'try { require(process.argv[1]).version } catch { "" }' "$dir/node_modules/playwright-core/package.json" 2>/dev/null || true)"
if [ "$installed" = "$pinned" ]; then
    echo "install-browser: playwright-core $pinned already installed"
else
    (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi
/usr/bin/chromium --version
echo "install-browser: $(node --version), playwright-core $pinned in $dir/node_modules"

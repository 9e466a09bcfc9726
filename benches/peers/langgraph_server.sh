#!/usr/bin/env bash
# The runs server's load test beside LangGraph's server API: starts
# `langgraph dev` (in-memory runtime) on 127.0.0.1 serving benches/peers/langgraph_server/,
# runs `cargo bench -p harnessx-server --bench load` with LANGGRAPH_URL set so that every
# workload runs against harnessx, the bare axum floor and LangGraph in one process and run,
# then stops the server.
#
#   bash benches/peers/langgraph_server.sh
#
# LANGGRAPH_PORT picks the port (default: a free one); LANGGRAPH_JOBS the server's
# --n-jobs-per-worker (default 8, as harnessx's 8 workers in load.rs). The venv is made once
# under $CARGO_TARGET_DIR (or target/)/langgraph-server-venv from
# langgraph_server/requirements.txt (Python 3.11). The server's log is kept beside it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
jobs="${LANGGRAPH_JOBS:-8}"

python="$(command -v python3.11 || command -v python3 || true)"
if [[ -z "$python" ]]; then
  echo "error: needs Python 3.11 (python3.11 or python3 on PATH)" >&2
  exit 1
fi

target="${CARGO_TARGET_DIR:-$repo/target}"
mkdir -p "$target"
venv="$target/langgraph-server-venv"
reqs="$here/langgraph_server/requirements.txt"
if [[ ! -x "$venv/bin/langgraph" ]] || ! cmp -s "$reqs" "$venv/.harnessx-requirements"; then
  echo "== creating $venv from $reqs" >&2
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$reqs"
  cp "$reqs" "$venv/.harnessx-requirements"
fi

# `langgraph dev` resolves the graphs' paths from its working directory and writes its
# in-memory state's snapshots (.langgraph_api/) there: run it from a copy, not the repository.
work="$target/langgraph-server-work"
rm -rf "$work"
mkdir -p "$work"
cp "$here/langgraph_server/graphs.py" "$here/langgraph_server/langgraph.json" "$work/"

port="${LANGGRAPH_PORT:-$("$venv/bin/python" -c \
  'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
log="$target/langgraph-server.log"
echo "== langgraph dev on 127.0.0.1:$port, --n-jobs-per-worker $jobs; log in $log" >&2
(
  cd "$work"
  # No telemetry or tracing (no network here but the registries); warnings and errors only in
  # the log, as harnessx logs nothing per request in the bench.
  LANGGRAPH_CLI_NO_ANALYTICS=1 LANGSMITH_TRACING=false LOG_LEVEL=WARNING \
    exec setsid "$venv/bin/langgraph" dev --no-browser --no-reload --host 127.0.0.1 \
    --port "$port" --n-jobs-per-worker "$jobs" --server-log-level WARNING
) > "$log" 2>&1 &
server=$!
stop() {
  if kill -0 "$server" 2>/dev/null; then
    kill -- "-$server" 2>/dev/null || kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
}
trap stop EXIT

for ((i = 0; i < 240; i++)); do
  if curl -fsS -m 2 "http://127.0.0.1:$port/ok" > /dev/null 2>&1; then
    break
  fi
  if ! kill -0 "$server" 2>/dev/null; then
    echo "error: langgraph dev exited before answering GET /ok; its log ($log) ends:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  sleep 0.5
done
if ! curl -fsS -m 2 "http://127.0.0.1:$port/ok" > /dev/null 2>&1; then
  echo "error: langgraph dev did not answer GET /ok within 120 s; its log ($log) ends:" >&2
  tail -n 40 "$log" >&2
  exit 1
fi
echo "== langgraph dev is up ($("$venv/bin/pip" show langgraph-api 2>/dev/null | grep -i '^version' \
  | sed 's/Version: /langgraph-api /')); load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

cd "$repo"
LANGGRAPH_URL="http://127.0.0.1:$port" cargo bench -p harnessx-server --bench load
echo "== done; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

#!/usr/bin/env bash
# Peer benchmarks for the durable runs: the bare SQLite commit floor,
# LangGraph (SqliteSaver, PostgresSaver) and DBOS Transact (SQLite, PostgreSQL), measured in
# one run as interleaved rounds. Prints one JSON line per figure: the median over the rounds.
#
#   bash benches/peers/run.sh                    # SQLite figures; PostgreSQL ones skipped
#   PG_URL=postgresql://postgres@127.0.0.1:PORT/postgres bash benches/peers/run.sh
#
# PEERS_ROUNDS (default 5) sets the number of rounds. The venv is made once under
# $CARGO_TARGET_DIR (or target/)/peers-venv, else $TMPDIR, from requirements.txt (Python 3.11).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
rounds="${PEERS_ROUNDS:-5}"

python="$(command -v python3.11 || command -v python3 || true)"
if [[ -z "$python" ]]; then
  echo "error: needs Python 3.11 (python3.11 or python3 on PATH)" >&2
  exit 1
fi

venv="${CARGO_TARGET_DIR:-$repo/target}/peers-venv"
if ! mkdir -p "$(dirname "$venv")" 2>/dev/null || [[ ! -w "$(dirname "$venv")" ]]; then
  venv="${TMPDIR:-/tmp}/harnessx-peers-venv"
fi
if [[ ! -x "$venv/bin/python" ]] || ! cmp -s "$here/requirements.txt" "$venv/.harnessx-requirements"; then
  echo "== creating $venv from benches/peers/requirements.txt" >&2
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$venv/.harnessx-requirements"
fi
py="$venv/bin/python"

raw="$(mktemp "${TMPDIR:-/tmp}/harnessx-peers-XXXXXX.jsonl")"
echo "== $rounds rounds; per-round lines in $raw; python $("$py" --version 2>&1);" \
  "PG_URL $([[ -n "${PG_URL:-}" ]] && echo "set" || echo "unset: PostgreSQL figures skipped")" >&2
workloads=("floor.py" "langgraph_bench.py sqlite" "dbos_bench.py sqlite"
           "langgraph_bench.py postgres" "dbos_bench.py postgres")
cd "$here"
for ((round = 1; round <= rounds; round++)); do
  for workload in "${workloads[@]}"; do
    echo "-- round $round: $workload (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    # shellcheck disable=SC2086 # the workload is a script and its argument
    PEERS_ROUND="$round" "$py" $workload >> "$raw"
  done
done
"$py" aggregate.py "$raw"

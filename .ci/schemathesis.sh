#!/usr/bin/env bash
# Property-based API tests: installs schemathesis (PyPI) in a venv, starts `harnessx serve` on
# 127.0.0.1 with a test key and a scripted config, runs schemathesis against every route of the
# OpenAPI document with a bounded number of examples, and stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SCHEMATHESIS_VENV:-target/schemathesis-venv}"
PORT="${SCHEMATHESIS_PORT:-18787}"
KEY="schemathesis-test-key-0123456789"
MAX_EXAMPLES="${SCHEMATHESIS_MAX_EXAMPLES:-20}"

if [[ ! -x "$VENV/bin/schemathesis" ]]; then
  echo "== installing schemathesis into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q "schemathesis>=4,<5"
fi
if [[ ! -x "$VENV/bin/openapi-spec-validator" ]]; then
  echo "== installing openapi-spec-validator into $VENV"
  "$VENV/bin/pip" install -q "openapi-spec-validator>=0.7,<0.8"
fi

echo "== building harnessx"
cargo build -q -p harnessx-server --bin harnessx
BIN="${CARGO_TARGET_DIR:-target}/debug/harnessx"

"$BIN" serve --config .ci/schemathesis/harnessx.toml --bind "127.0.0.1:$PORT" &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS -H "Authorization: Bearer $KEY" "http://127.0.0.1:$PORT/v2/openapi.json" -o "$VENV/openapi.json"

echo "== openapi-spec-validator: the document is valid OpenAPI, so generated clients work"
"$VENV/bin/openapi-spec-validator" "$VENV/openapi.json"

# Real resources for the routes that take an id, so schemathesis reaches their logic instead of
# 404s: a run and its conversation, created through the API itself.
api() {
  curl -fsS -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" "$@"
}
RUN=$(api -X POST "http://127.0.0.1:$PORT/v2/runs" \
  -d '{"agent": "replier", "input": "seeded for schemathesis"}')
read -r RUN_ID CONVERSATION < <(python3 -c \
  'import json, sys; run = json.loads(sys.argv[1]); print(run["id"], run["conversation"])' "$RUN")
CONFIG="$VENV/schemathesis.toml"
cat > "$CONFIG" <<TOML
# Written by .ci/schemathesis.sh: ids of resources it created before the run.
[parameters]
run_id = $RUN_ID
id = "$CONVERSATION"
name = "seeded"
TOML
echo "== seeded run $RUN_ID and conversation $CONVERSATION"

echo "== schemathesis"
"$VENV/bin/schemathesis" --config-file "$CONFIG" run "$VENV/openapi.json" \
  --url "http://127.0.0.1:$PORT" \
  -H "Authorization: Bearer $KEY" \
  --max-examples "$MAX_EXAMPLES" \
  --checks not_a_server_error,response_schema_conformance,status_code_conformance \
  --request-timeout 10 \
  --seed 1

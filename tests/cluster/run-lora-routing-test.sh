#!/usr/bin/env bash
# ctest entry: a LoRA adapter behind a router. The engine loads `sql` ([lora] adapters);
# the router lists it (its own [lora]) and forwards the request's adapter by name: the
# text through the router is what a one-process server with the same adapter writes, and
# not the base's. Run-time loads are the engines' business: the router answers 400.
#   run-lora-routing-test.sh INFLIGHT_BIN PLUGIN_DIR SHARED_DIR WORK_DIR
set -euo pipefail
INFLIGHT_BIN=$1 PLUGIN_DIR=$2 SHARED_DIR=$3 WORK=$4
here=$(cd "$(dirname "$0")" && pwd)
SOURCE_DIR=$(cd "$here/../.." && pwd)
source "$SOURCE_DIR/tests/gateway/serve-lib.sh"

CLUSTER_TEST="lora routing test"
source "$here/cluster-lib.sh"

need curl python3
need_file "$SHARED_DIR/models/stories260K/stories260K.bin"
rm -rf "$WORK"
mkdir -p "$WORK"
FAIL_LOGS=$WORK
python3 "$SOURCE_DIR/scripts/make-lora.py" "$SHARED_DIR/models/stories260K/stories260K.bin" "$WORK/sql"

complete() {  # complete URL MODEL: the text of one greedy completion
  curl -sS "$1/v1/completions" -H 'content-type: application/json' \
    -d "{\"model\": \"$2\", \"prompt\": \"Once upon a time\", \"max_tokens\": 12, \"temperature\": 0}" |
    python3 -c 'import json, sys; d = json.load(sys.stdin); assert "error" not in d, d; print(d["model"] + ":" + d["choices"][0]["text"], end="")'
}

start_server "$WORK/one.log" --set model.name=stories --lora "sql=$WORK/sql"
want_sql=$(complete "http://127.0.0.1:$PORT" sql)
want_base=$(complete "http://127.0.0.1:$PORT" stories)
stop_server

start_engine "$WORK/engine.log" 0 --config "$SOURCE_DIR/config/cpu-small.toml" $(model_flags) \
  --set model.name=stories --lora "sql=$WORK/sql"
start_router "$WORK/router.log" --config "$SOURCE_DIR/config/cpu-small.toml" $(model_flags) --set model.name=stories \
  --set server.port=0 --engines "127.0.0.1:$ENGINE_PORT" --lora "sql=$WORK/sql"
got_sql=$(complete "$ROUTER_URL" sql)
got_base=$(complete "$ROUTER_URL" stories)
[ "$got_sql" = "$want_sql" ] || fail "through the router sql wrote '$got_sql', one process '$want_sql'"
[ "$got_base" = "$want_base" ] || fail "through the router the base wrote '$got_base', one process '$want_base'"
[ "$got_sql" != "sql:${want_base#stories:}" ] || fail "the adapter wrote the base's text"
models=$(curl -sS "$ROUTER_URL/v1/models" | python3 -c 'import json, sys; print(",".join(m["id"] for m in json.load(sys.stdin)["data"]))')
[ "$models" = "stories,sql" ] || fail "the router lists $models"
status=$(curl -sS -o "$WORK/load.json" -w '%{http_code}' "$ROUTER_URL/v1/load_lora_adapter" \
  -d "{\"lora_name\": \"more\", \"lora_path\": \"$WORK/sql\"}")
[ "$status" = 400 ] && grep -q "engines" "$WORK/load.json" || fail "a load at the router answered $status: $(cat "$WORK/load.json")"
stop_process "$ROUTER_PID" router
stop_process "$ENGINE_PID" engine
echo "ok: the adapter through the router writes what one process writes ('$got_sql'), the base its own"

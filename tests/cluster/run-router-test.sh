#!/usr/bin/env bash
# ctest entry: a router in front of two engine processes, on this machine (loopback).
#   - completions through the router equal `inflight generate`'s greedy text, streamed
#     (SSE) and not, and round_robin sends them to both engines (/metrics);
#   - kill -9 of one engine: requests keep succeeding on the other, /health stays ok and
#     /metrics says which engine is down;
#   - the engine started again on its port is taken back without restarting the router;
#   - SIGTERM: every process exits 0.
#   run-router-test.sh INFLIGHT_BIN PLUGIN_DIR SHARED_DIR WORK_DIR
set -euo pipefail
INFLIGHT_BIN=$1 PLUGIN_DIR=$2 SHARED_DIR=$3 WORK=$4
here=$(cd "$(dirname "$0")" && pwd)
SOURCE_DIR=$(cd "$here/../.." && pwd)
source "$SOURCE_DIR/tests/gateway/serve-lib.sh"

CLUSTER_TEST="router test"
source "$here/cluster-lib.sh"

need curl python3
need_file "$SHARED_DIR/models/stories260K/stories260K.bin"
mkdir -p "$WORK"
engine_args=(--config "$SOURCE_DIR/config/cpu-small.toml" $(model_flags))

start_engine "$WORK/engine-a.log" 0 "${engine_args[@]}"; port_a=$ENGINE_PORT pid_a=$ENGINE_PID
start_engine "$WORK/engine-b.log" 0 "${engine_args[@]}"; port_b=$ENGINE_PORT pid_b=$ENGINE_PID

# The router: the HTTP gateway in front of both.
start_router "$WORK/router.log" "${engine_args[@]}" --set server.port=0 \
  --engines "127.0.0.1:$port_a,127.0.0.1:$port_b" --route-policy round_robin
base=$ROUTER_URL
grep -q "router: routing policy round_robin" "$WORK/router.log"

expected=$(greedy_text "Once upon a time" 24 | head -c -1 | sed '1s/^Once upon a time//')
complete() {  # complete STREAM: the text of one greedy completion
  curl -sS -N "$base/v1/completions" -H 'content-type: application/json' \
    -d "{\"prompt\": \"Once upon a time\", \"max_tokens\": 24, \"temperature\": 0, \"stream\": $1}" |
    python3 -c '
import json, sys
body = sys.stdin.read()
if body.startswith("data: "):
    text = ""
    for ev in body.split("\n\n"):
        if ev.startswith("data: ") and ev != "data: [DONE]":
            chunk = json.loads(ev[6:])
            assert "error" not in chunk, chunk
            text += "".join(c["text"] for c in chunk["choices"])
    print(text, end="")
else:
    doc = json.loads(body)
    assert "error" not in doc, doc
    print(doc["choices"][0]["text"], end="")'
}
for stream in false true false true; do
  got=$(complete $stream)
  if [ "$got" != "$expected" ]; then
    echo "router test: stream=$stream gave '$got', expected '$expected'"
    exit 1
  fi
done
metric() { curl -sS "$base/metrics" | sed -n "s/^inflight:$1{engine=\"127.0.0.1:$2\"} //p"; }
[ "$(metric router_requests_routed_total "$port_a")" -ge 2 ] && [ "$(metric router_requests_routed_total "$port_b")" -ge 2 ] || {
  echo "router test: round_robin did not use both engines:"; curl -sS "$base/metrics" | grep router_; exit 1; }

# The live step feed behind the router: one engine's steps at a time (?engine=, by
# default the first), the engine event naming it and every engine.
# feed_finishes FILE: the engine event's "engine", how many engines it lists, and the
# number of finishes its steps carry.
feed_finishes() {
  python3 - "$1" <<'PY'
import json, sys
engine, engines, finished = None, 0, 0
for block in open(sys.argv[1]).read().split("\n\n"):
    lines = block.split("\n")
    name = next((l[7:] for l in lines if l.startswith("event: ")), None)
    data = "".join(l[6:] for l in lines if l.startswith("data: "))
    if not data:
        continue
    payload = json.loads(data)
    if name == "engine":
        engine, engines = payload.get("engine"), len(payload.get("engines", []))
    elif name == "step":
        finished += payload["num_finished"]
print(engine, engines, finished)
PY
}
# watch_feed QUERY ENGINE_PORT: reads the feed while 4 completions run (round robin: 2 on
# each engine), until the 2 of ENGINE_PORT finished there (30 s at most); checks the rest.
watch_feed() {
  local out="$WORK/feed$2.txt"
  curl -sS -N "$base/v1/engine/events$1" >"$out" &
  local feed=$!
  for _ in $(seq 1 100); do grep -q '^event: engine' "$out" && break; sleep 0.1; done
  for _ in 1 2 3 4; do [ "$(complete false)" = "$expected" ] || fail "a completion failed while the feed was read"; done
  local seen=""
  for _ in $(seq 1 300); do
    seen=$(feed_finishes "$out")
    [ "$seen" = "127.0.0.1:$2 2 2" ] && break
    sleep 0.1
  done
  kill "$feed" 2>/dev/null || true
  wait "$feed" 2>/dev/null || true
  [ "$seen" = "127.0.0.1:$2 2 2" ] || {
    cat "$out" >&2; fail "the feed of engine $2 gave '$seen' (engine, engines listed, finishes): expected its 2 finishes only"; }
}
watch_feed "" "$port_a"
watch_feed "?engine=127.0.0.1%3A$port_b" "$port_b"
code=$(curl -sS -o "$WORK/feed-bad.json" -w '%{http_code}' "$base/v1/engine/events?engine=127.0.0.1:1")
[ "$code" = 400 ] || fail "a feed of an engine the router does not know answered $code"

# kill -9 one engine: the router carries on with the other.
kill -9 "$pid_a"
wait "$pid_a" 2>/dev/null || true
for _ in 1 2 3 4; do
  got=$(complete false)
  [ "$got" = "$expected" ] || { echo "router test: after kill -9, got '$got'"; exit 1; }
done
[ "$(metric router_engine_up "$port_a")" = 0 ] && [ "$(metric router_engine_up "$port_b")" = 1 ] || {
  echo "router test: /metrics does not show engine a down:"; curl -sS "$base/metrics" | grep router_; exit 1; }
curl -sSf "$base/health" >/dev/null

# The engine comes back on its port: the router takes it back within a few seconds.
start_engine "$WORK/engine-a2.log" "$port_a" "${engine_args[@]}"
pid_a=$ENGINE_PID
for _ in $(seq 1 100); do
  [ "$(metric router_engine_up "$port_a")" = 1 ] && break
  sleep 0.1
done
[ "$(metric router_engine_up "$port_a")" = 1 ] || { echo "router test: the restarted engine was not taken back"; exit 1; }
before=$(metric router_requests_routed_total "$port_a")
for _ in 1 2 3 4; do [ "$(complete false)" = "$expected" ]; done
[ "$(metric router_requests_routed_total "$port_a")" -gt "$before" ] || { echo "router test: nothing routed to the restarted engine"; exit 1; }

stop_process "$ROUTER_PID" "the router"
grep -q "^inflight: shut down" "$WORK/router.log"
stop_process "$pid_a" "engine a"
stop_process "$pid_b" "engine b"
trap - EXIT
echo "router test: routing, SSE, kill -9, rejoin and shutdown: ok"

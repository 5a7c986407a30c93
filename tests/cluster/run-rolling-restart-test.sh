#!/usr/bin/env bash
# ctest entry: engines restarted behind a router, one at a time, as `systemctl restart`
# does, while clients keep sending requests.
#   - SIGTERM to an engine with streams running: it drains (finishes them) and the
#     router sends every new request to the other engine at once;
#   - a rolling restart of both engines, one after the other, under a request every
#     100 ms: every request succeeds, and each restarted engine takes requests again;
#   - the last engine draining: a new request gets 503 with Retry-After.
#   run-rolling-restart-test.sh INFLIGHT_BIN PLUGIN_DIR SHARED_DIR WORK_DIR
set -euo pipefail
INFLIGHT_BIN=$1 PLUGIN_DIR=$2 SHARED_DIR=$3 WORK=$4
here=$(cd "$(dirname "$0")" && pwd)
SOURCE_DIR=$(cd "$here/../.." && pwd)
source "$SOURCE_DIR/tests/gateway/serve-lib.sh"

CLUSTER_TEST="rolling restart test"
source "$here/cluster-lib.sh"

need curl python3
need_file "$SHARED_DIR/models/stories260K/stories260K.bin"
rm -rf "$WORK"
mkdir -p "$WORK"
FAIL_LOGS=$WORK
# Every step takes at least 50 ms: a stream of 400 tokens runs for 20 s or more, so an
# engine it runs on drains that long, whatever the machine.
engine_args=(--config "$SOURCE_DIR/config/cpu-small.toml" $(model_flags) --set debug.step_delay_s=0.05
  --set server.shutdown_grace_s=60)

start_engine "$WORK/engine-a.log" 0 "${engine_args[@]}"; port_a=$ENGINE_PORT pid_a=$ENGINE_PID
start_engine "$WORK/engine-b.log" 0 "${engine_args[@]}"; port_b=$ENGINE_PORT pid_b=$ENGINE_PID
start_router "$WORK/router.log" "${engine_args[@]}" --set server.port=0 --set router.reconnect_interval_s=0.2 \
  --engines "127.0.0.1:$port_a,127.0.0.1:$port_b" --route-policy round_robin
base=$ROUTER_URL

metric() { curl -sS "$base/metrics" | sed -n "s/^inflight:$1{engine=\"127.0.0.1:$2\"} //p"; }
# short OUT: one short completion; its HTTP status into OUT (headers in OUT.headers).
short() {
  curl -sS -o "$1.body" -D "$1.headers" -w '%{http_code}\n' "$base/v1/completions" -H 'content-type: application/json' \
    -d '{"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0}' >"$1" 2>/dev/null || echo 000 >"$1"
}
# long OUT: a stream of 400 tokens, in the background; sets LONG_PID.
long() {
  curl -sS -N -o "$1" "$base/v1/completions" -H 'content-type: application/json' \
    -d '{"prompt": "Once upon a time", "max_tokens": 400, "ignore_eos": true, "temperature": 0, "stream": true}' &
  LONG_PID=$!
}
# wait_log LOG PATTERN WHAT: waits (30 s at most) for a line matching PATTERN.
wait_log() {
  for _ in $(seq 1 300); do
    grep -q "$2" "$1" && return 0
    sleep 0.1
  done
  fail "$3"
}
# rejoin PORT: the router takes the engine on PORT back (up, not draining) within 30 s.
rejoin() {
  for _ in $(seq 1 300); do
    [ "$(metric router_engine_up "$1")" = 1 ] && [ "$(metric router_engine_draining "$1")" = 0 ] && return 0
    sleep 0.1
  done
  fail "the engine on port $1 was not taken back"
}

# 1. Four streams, two on each engine; SIGTERM to engine a: then six short requests.
longs=()
for i in 1 2 3 4; do long "$WORK/long-$i.txt"; longs+=("$LONG_PID"); done
for _ in $(seq 1 300); do
  [ "$(metric router_requests_routed_total "$port_a")" = 2 ] && [ "$(metric router_requests_routed_total "$port_b")" = 2 ] && break
  sleep 0.1
done
kill -TERM "$pid_a"
wait_log "$WORK/router.log" "router: engine 127.0.0.1:$port_a drains" "the router did not hear that engine a drains"
[ "$(metric router_engine_draining "$port_a")" = 1 ] || fail "/metrics does not show engine a draining"
statuses=""
for i in 1 2 3 4 5 6; do short "$WORK/six-$i"; statuses+="$(cat "$WORK/six-$i") "; done
[ "$statuses" = "200 200 200 200 200 200 " ] || fail "requests during engine a's drain got: $statuses"
kill -0 "$pid_a" 2>/dev/null || fail "engine a finished draining before the six requests: the test proves nothing"
[ "$(metric router_requests_routed_total "$port_a")" = 2 ] || fail "a request went to the draining engine"
for p in "${longs[@]}"; do wait "$p" || fail "a stream that was running when its engine drained failed"; done
for i in 1 2 3 4; do
  grep -q '"finish_reason":"length"' "$WORK/long-$i.txt" || fail "stream $i did not finish (length): $(tail -c 300 "$WORK/long-$i.txt")"
done
wait "$pid_a" || fail "engine a exited with $? after draining"

# 2. A rolling restart: a then b, each stopped and started again, under a request every
# 100 ms; the engines have requests running when they drain.
start_engine "$WORK/engine-a2.log" "$port_a" "${engine_args[@]}"; pid_a=$ENGINE_PID
rejoin "$port_a"
mkdir -p "$WORK/load"
( n=0; while [ ! -e "$WORK/load.stop" ]; do n=$((n + 1)); short "$WORK/load/$n" & sleep 0.1; done; wait ) &
load=$!
sleep 1
for which in a b; do
  if [ "$which" = a ]; then pid=$pid_a port=$port_a; else pid=$pid_b port=$port_b; fi
  kill -TERM "$pid"
  wait "$pid" || fail "engine $which exited with $? after SIGTERM"
  sleep 0.5  # requests arrive while it is gone
  start_engine "$WORK/engine-$which-restart.log" "$port" "${engine_args[@]}"
  if [ "$which" = a ]; then pid_a=$ENGINE_PID; else pid_b=$ENGINE_PID; fi
  rejoin "$port"
  sleep 1
done
touch "$WORK/load.stop"
wait "$load"
total=$(ls "$WORK"/load/* | grep -cv '\.' || true)
bad=$(cat $(ls "$WORK"/load/* | grep -v '\.') | grep -cv '^200$' || true)
echo "rolling restart: $total requests, $bad not 200"
[ "$total" -ge 20 ] || fail "only $total requests were sent during the rolling restart"
[ "$bad" = 0 ] || fail "$bad of $total requests failed during the rolling restart: $(cat "$WORK"/load/*.body | grep -o '"message":"[^"]*"' | sort | uniq -c)"
# Both restarted engines took requests.
before_a=$(metric router_requests_routed_total "$port_a") before_b=$(metric router_requests_routed_total "$port_b")
for i in 1 2 3 4; do short "$WORK/after-$i"; [ "$(cat "$WORK/after-$i")" = 200 ] || fail "a request after the restart failed"; done
[ "$(metric router_requests_routed_total "$port_a")" -gt "$before_a" ] && [ "$(metric router_requests_routed_total "$port_b")" -gt "$before_b" ] ||
  fail "a restarted engine took no requests"

# 3. The last engine drains: b is stopped, a drains with a stream running.
stop_process "$pid_b" "engine b"
long "$WORK/last.txt"; last=$LONG_PID
for _ in $(seq 1 300); do grep -q '"text"' "$WORK/last.txt" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$pid_a"
wait_log "$WORK/router.log" "router: engine 127.0.0.1:$port_a drains" "the router did not hear that the last engine drains"
short "$WORK/none"
[ "$(cat "$WORK/none")" = 503 ] || fail "with the last engine draining, a request got $(cat "$WORK/none"), not 503"
grep -qi '^retry-after: ' "$WORK/none.headers" || fail "the 503 has no Retry-After"
grep -q '"code":"unavailable"' "$WORK/none.body" || fail "the 503 does not say unavailable: $(cat "$WORK/none.body")"
code=$(curl -sS -o /dev/null -w '%{http_code}' "$base/health")
[ "$code" = 503 ] || fail "/health answered $code with every engine draining"
kill "$last" 2>/dev/null || true  # the client leaves: its request is cancelled, the drain ends
wait "$last" 2>/dev/null || true
wait "$pid_a" || fail "engine a exited with $? after draining"

stop_process "$ROUTER_PID" "the router"
trap - EXIT
echo "rolling restart test: drain, rolling restart under load and the last engine's drain: ok"

#!/usr/bin/env bash
# ctest entry: cache-aware routing in front of two engine processes (loopback).
#   - with --route-policy prefix, requests sharing a long prefix all land on the engine
#     that cached it: the router's index fills from that engine's reports, and that
#     engine's own metrics (relabelled on the router's /metrics) count every later
#     request's prefix as a cache hit, while the other engine computes nothing;
#   - the router's /metrics carries each engine's metrics under engine="host:port";
#   - a router started after the engines cached the prefix (a late subscriber) gets the
#     full index and routes the same way.
#   run-prefix-routing-test.sh INFLIGHT_BIN PLUGIN_DIR SHARED_DIR WORK_DIR
set -euo pipefail
INFLIGHT_BIN=$1 PLUGIN_DIR=$2 SHARED_DIR=$3 WORK=$4
here=$(cd "$(dirname "$0")" && pwd)
SOURCE_DIR=$(cd "$here/../.." && pwd)
source "$SOURCE_DIR/tests/gateway/serve-lib.sh"

CLUSTER_TEST="prefix routing test"
source "$here/cluster-lib.sh"

need curl python3
need_file "$SHARED_DIR/models/stories260K/stories260K.bin"
mkdir -p "$WORK"
engine_args=(--config "$SOURCE_DIR/config/cpu-small.toml" $(model_flags))

start_engine "$WORK/engine-a.log" 0 "${engine_args[@]}"; port_a=$ENGINE_PORT pid_a=$ENGINE_PID
start_engine "$WORK/engine-b.log" 0 "${engine_args[@]}"; port_b=$ENGINE_PORT pid_b=$ENGINE_PID
engines="127.0.0.1:$port_a,127.0.0.1:$port_b"

start_prefix_router() {
  start_router "$1" "${engine_args[@]}" --set server.port=0 --engines "$engines" --route-policy prefix
  base=$ROUTER_URL
}

# A long shared prefix (about 30 blocks of 16 tokens) and a short distinct ending.
prefix="Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. \
One day, she saw a big red ball under a tree. She ran to the ball and picked it up. Her mom said it was time to go \
home for lunch, so Lily took the ball and walked home with her mom. They ate soup and bread and talked about the park."
complete() {  # complete SUFFIX: one greedy completion of prefix + SUFFIX; fails on an error
  curl -sS "$base/v1/completions" -H 'content-type: application/json' \
    -d "{\"prompt\": \"$prefix $1\", \"max_tokens\": 4, \"temperature\": 0}" |
    python3 -c 'import json, sys; d = json.load(sys.stdin); assert "error" not in d, d'
}
# value NAME PORT: the sum of an engine's samples of NAME on the router's /metrics.
value() {
  curl -sS "$base/metrics" | python3 -c '
import sys
name, engine = sys.argv[1], "engine=\"127.0.0.1:" + sys.argv[2] + "\""
total = 0.0
for line in sys.stdin:
    if line.startswith(name + "{") and engine in line.split("}")[0]:
        total += float(line.rsplit(" ", 1)[1])
print(int(total))' "inflight:$1" "$2"
}
# wait_indexed: until the router's index holds blocks for some engine (its reports arrived).
wait_indexed() {
  for _ in $(seq 1 300); do
    [ $(( $(value router_indexed_blocks "$port_a") + $(value router_indexed_blocks "$port_b") )) -gt 0 ] && return 0
    sleep 0.1
  done
  curl -sS "$base/metrics" | grep router_ >&2
  fail "the router's prefix index stayed empty"
}

start_prefix_router "$WORK/router.log"
grep -q "router: routing policy prefix" "$WORK/router.log"
complete "The end."
wait_indexed
if [ "$(value router_indexed_blocks "$port_a")" -gt 0 ]; then home=$port_a other=$port_b; else home=$port_b other=$port_a; fi
[ "$(value router_indexed_blocks "$other")" = 0 ] || fail "both engines reported the prefix after one request"
for suffix in "Lily smiled." "The sun was warm." "Mom laughed." "They sang a song." "It was fun."; do
  complete "$suffix"
done

# The engines' own metrics, on the router's page under their address.
[ "$(value router_requests_routed_total "$home")" = 6 ] || {
  curl -sS "$base/metrics" | grep router_ >&2; fail "not every request went to the engine holding the prefix"; }
[ "$(value router_requests_routed_total "$other")" = 0 ] || fail "a request went to the engine without the prefix"
hits=$(value prefix_cache_hits_total "$home")
queries=$(value prefix_cache_queries_total "$home")
# The prefix is 8 full blocks of 16 tokens under stories260K's tokenizer: each of the 5
# later requests finds at least 6 of them, and most of its prompt.
[ "$hits" -ge $(( 5 * 6 * 16 )) ] && [ $(( 2 * hits )) -gt "$queries" ] ||
  fail "engine $home hit only $hits prompt tokens in its cache (of $queries)"
[ "$(value prefix_cache_queries_total "$other")" = 0 ] || fail "engine $other computed prompt tokens"
# The page first, then the search: grep -q stops reading at its match, and curl would fail
# writing the rest of a page longer than the pipe holds.
page=$(curl -sS "$base/metrics")
grep -q "^inflight:num_requests_running{engine=\"127.0.0.1:$home\",model_name=" <<<"$page" ||
  fail "/metrics lacks the engines' own gauges under the engine label"
curl -sS "$base/metrics" | python3 -c '
import sys
seen, current = set(), None
for line in sys.stdin:
    if line.startswith("# TYPE "):
        name = line.split()[2]
        assert name not in seen, "family " + name + " appears twice"
        seen.add(name)' || fail "a metric family appears twice on the router's /metrics"
stop_process "$ROUTER_PID" "the router"

# A router that starts now learns the whole cache from the engines' full reports.
start_prefix_router "$WORK/router-late.log"
wait_indexed
[ "$(value router_indexed_blocks "$home")" -gt 0 ] && [ "$(value router_indexed_blocks "$other")" = 0 ] ||
  fail "the late router's index does not match the engines' caches"
before=$(value prefix_cache_hits_total "$home")
complete "Lily was happy."
[ "$(value router_requests_routed_total "$home")" = 1 ] || fail "the late router did not route to the engine holding the prefix"
[ "$(value prefix_cache_hits_total "$home")" -gt "$before" ] || fail "the late router's request missed the cache"
stop_process "$ROUTER_PID" "the router"

stop_process "$pid_a" "engine a"
stop_process "$pid_b" "engine b"
trap - EXIT
echo "prefix routing test: shared prefixes stay on their engine, engine metrics on the router, late router: ok"

#!/usr/bin/env bash
# Routing figures (docs/benchmarks.md, "Routing"): `inflight bench serve` against a
# router in front of 1, 2 and 4 engine processes on this machine, for each routing
# policy, on the `prefix` and `prefix-chat` workloads. Each configuration starts fresh
# engines (empty caches) and a fresh router, runs one benchmark, and keeps its output;
# the per-engine prefill tokens come from the engines' own counters (bench serve reads
# the router's /metrics, which carries them under engine="host:port").
#
#   bench/route-matrix.sh [INFLIGHT_BIN] [OUT_DIR]
# Environment: CONFIG (default config/bench-20M.toml), SIZE (small), ENGINES ("1 2 4"),
#   POLICIES ("round_robin least_load prefix"; NAME+key=value+... passes settings to the
#   policy, e.g. prefix+balance_abs_threshold=128), WORKLOADS ("prefix prefix-chat"),
#   THREADS (engine threads, 1), QUIET (a wrapper for the timed runs, e.g. /work/figs/quiet.sh),
#   PREFIX_ARGS (more `bench serve` options for the prefix workload, e.g. "--num-prompts 256").
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$here/build/bin/inflight}
OUT=${2:-$here/build/route-matrix}
CONFIG=${CONFIG:-$here/config/bench-20M.toml}
SIZE=${SIZE:-small}
ENGINES=${ENGINES:-"1 2 4"}
POLICIES=${POLICIES:-"round_robin least_load prefix"}
WORKLOADS=${WORKLOADS:-"prefix prefix-chat"}
THREADS=${THREADS:-1}
PREFIX_ARGS=${PREFIX_ARGS:-}
QUIET=${QUIET:-}
mkdir -p "$OUT"
pids=()
stop_all() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap stop_all EXIT

wait_line() {  # wait_line LOG SED_EXPR: prints the first capture once the log has it
  local v
  for _ in $(seq 1 600); do
    v=$(sed -n "$2" "$1" | head -1)
    [ -n "$v" ] && { echo "$v"; return 0; }
    sleep 0.1
  done
  echo "route-matrix: nothing in $1:" >&2
  cat "$1" >&2
  return 1
}

run_one() {  # run_one NUM_ENGINES POLICY[+key=value...] WORKLOAD
  local n=$1 policy=${2%%+*} workload=$3 tag="$3-$1-$2" engines="" settings=()
  IFS=+ read -ra kvs <<<"$2"
  for kv in "${kvs[@]:1}"; do settings+=(--route-setting "$kv"); done
  for i in $(seq 1 "$n"); do
    "$BIN" serve --role engine --config "$CONFIG" --port 0 --set engine.threads="$THREADS" \
      >"$OUT/$tag.engine$i.log" 2>&1 &
    pids+=($!)
    local port
    port=$(wait_line "$OUT/$tag.engine$i.log" 's/^inflight: serving the engine on tcp:\/\/127.0.0.1:\([0-9]*\).*/\1/p')
    engines="$engines${engines:+,}127.0.0.1:$port"
  done
  "$BIN" serve --role router --config "$CONFIG" --set server.port=0 --engines "$engines" --route-policy "$policy" "${settings[@]}" \
    >"$OUT/$tag.router.log" 2>&1 &
  pids+=($!)
  local http
  http=$(wait_line "$OUT/$tag.router.log" 's/^inflight: listening on http:\/\/[0-9.]*:\([0-9]*\).*/\1/p')
  sleep 1  # the engines' first (full) reports
  local extra=""
  [ "$workload" = prefix ] && extra=$PREFIX_ARGS
  # shellcheck disable=SC2086
  $QUIET "$BIN" bench serve --url "http://127.0.0.1:$http" --workload "$workload" --size "$SIZE" --ignore-eos \
    --result-json "$OUT/$tag.json" $extra >"$OUT/$tag.txt" 2>&1
  stop_all
  echo "== $tag"
  grep -E "Request throughput|Output token throughput|Median TTFT|P99 TTFT|Prefix cache hit rate" "$OUT/$tag.txt" || true
  sed -n '/^engine /,$p' "$OUT/$tag.txt"
}

for workload in $WORKLOADS; do
  for n in $ENGINES; do
    for policy in $POLICIES; do
      # One engine: every policy sends everything to it; run it once.
      if [ "$n" = 1 ] && [ "$policy" != "$(echo $POLICIES | awk '{print $NF}')" ]; then continue; fi
      run_one "$n" "$policy" "$workload"
    done
  done
done

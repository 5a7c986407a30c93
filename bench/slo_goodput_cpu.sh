#!/usr/bin/env bash
# docs/simulate.md, "Goodput policy": real CPU runs of every policy against a running
# server, and the simulation of the same runs with the shipped CPU profile.
#
#   bench/slo_goodput_cpu.sh [OUT_DIR]
# For each policy: `inflight serve --config config/bench-20M.toml` (one compute thread,
# the policy, every request's targets = the SLO through scheduler.ttft_target_ms and
# tpot_target_ms), then `inflight bench serve` of the variance workload (small: 200
# requests) with gamma-bursty arrivals, swept over request rates, goodput at the SLO.
# Environment: INFLIGHT (default build/bin/inflight), QUIET (a wrapper for each timed
#   step, e.g. /work/figs/quiet.sh), POLICIES (default every shipped one), RATES
#   (8,12,16), TTFT (2000), TPOT (9), BURSTINESS (0.25), SEED (0), PORT (8431),
#   THREADS (1), PROFILE (profiles/cpu-bench-20M.json; "none" skips the simulation).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/build/slo-goodput}
bin=${INFLIGHT:-$here/build/bin/inflight}
quiet=${QUIET:-}
policies=${POLICIES:-"fcfs lpm orca prefill_first priority splitfuse static tgi slo"}
rates=${RATES:-8,12,16}
ttft=${TTFT:-2000}
tpot=${TPOT:-9}
burst=${BURSTINESS:-0.25}
seed=${SEED:-0}
port=${PORT:-8431}
threads=${THREADS:-1}
profile=${PROFILE:-$here/profiles/cpu-bench-20M.json}
config=$here/config/bench-20M.toml
mkdir -p "$out"
workload=(--workload variance --size small --burstiness "$burst" --seed "$seed")
for p in $policies; do
  "$bin" serve --config "$config" --port "$port" --set engine.threads="$threads" --set scheduler.policy="$p" \
    --set scheduler.ttft_target_ms="$ttft" --set scheduler.tpot_target_ms="$tpot" > "$out/serve-$p.log" 2>&1 &
  server=$!
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.2; done
  echo "== $p (real, CPU)"
  $quiet "$bin" bench serve --url "http://127.0.0.1:$port" "${workload[@]}" --ignore-eos \
    --sweep request-rate="$rates" --goodput ttft:"$ttft" tpot:"$tpot" > "$out/real-$p.txt" 2>&1 || true
  kill "$server"; wait "$server" 2>/dev/null || true
  sed -n '/^request-rate/,/latencies in ms/p' "$out/real-$p.txt"
done
if [ "$profile" != none ]; then
  echo "== simulated with $profile"
  "$bin" simulate --config "$config" --set engine.threads="$threads" --cost-model profile:"$profile" "${workload[@]}" \
    --policy "${policies// /,}" --sweep request-rate="$rates" --slo-ttft "$ttft" --slo-tpot "$tpot" 2> /dev/null \
    | tee "$out/simulated.txt"
fi

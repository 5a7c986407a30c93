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
#   (12,14,16,18,20), TTFT (1000), TPOT (8), BURSTINESS (0.25), SEED (0), PORT (8431),
#   THREADS (1), PROFILE (profiles/cpu-bench-20M.json; "none" skips the simulation),
#   CONFIG (config/bench-20M.toml: a deployment, e.g. with [scheduler.slo] settings),
#   REPEATS (1): runs of each policy, each on a fresh server (no cache from the last);
#   with more than one, a table of the median goodput per policy and rate, its range,
#   and the simulated figure beside it (the same requests at the same times).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/build/slo-goodput}
bin=${INFLIGHT:-$here/build/bin/inflight}
quiet=${QUIET:-}
policies=${POLICIES:-"fcfs lpm orca prefill_first priority splitfuse static tgi slo"}
rates=${RATES:-12,14,16,18,20}
ttft=${TTFT:-1000}
tpot=${TPOT:-8}
burst=${BURSTINESS:-0.25}
seed=${SEED:-0}
port=${PORT:-8431}
threads=${THREADS:-1}
profile=${PROFILE:-$here/profiles/cpu-bench-20M.json}
repeats=${REPEATS:-1}
config=${CONFIG:-$here/config/bench-20M.toml}
mkdir -p "$out"
workload=(--workload variance --size small --burstiness "$burst" --seed "$seed")
for r in $(seq "$repeats"); do
  for p in $policies; do
    tag=$p; [ "$repeats" -gt 1 ] && tag=$p-$r
    "$bin" serve --config "$config" --port "$port" --set engine.threads="$threads" --set scheduler.policy="$p" \
      --set scheduler.ttft_target_ms="$ttft" --set scheduler.tpot_target_ms="$tpot" > "$out/serve-$tag.log" 2>&1 &
    server=$!
    for _ in $(seq 300); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.2; done
    echo "== $tag (real, CPU)"
    $quiet "$bin" bench serve --url "http://127.0.0.1:$port" "${workload[@]}" --ignore-eos \
      --sweep request-rate="$rates" --goodput ttft:"$ttft" tpot:"$tpot" --result-json "$out/real-$tag.json" \
      > "$out/real-$tag.txt" 2>&1 || true
    kill "$server"; wait "$server" 2>/dev/null || true
    sed -n '/^request-rate/,/latencies in ms/p' "$out/real-$tag.txt"
  done
done
if [ "$profile" != none ]; then
  echo "== simulated with $profile"
  "$bin" simulate --config "$config" --set engine.threads="$threads" --cost-model profile:"$profile" "${workload[@]}" \
    --policy "${policies// /,}" --sweep request-rate="$rates" --slo-ttft "$ttft" --slo-tpot "$tpot" \
    --json "$out/simulated.json" 2> /dev/null | tee "$out/simulated.txt"
fi
if [ "$repeats" -gt 1 ]; then
  python3 - "$out" "$repeats" $policies << 'PY'
import json, os, statistics, sys
out, repeats, policies = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
sim = {}
if os.path.exists(os.path.join(out, "simulated.json")):
    for run in json.load(open(os.path.join(out, "simulated.json")))["runs"]:
        sim[(run["policy"], float(run["sweep"]["request-rate"]))] = run["summary"].get("goodput")
print("\nGoodput, good/s: median of %d real runs [min-max], simulated" % repeats)
rates = None
rows = {}
served = {}
for p in policies:
    per_rate = {}
    for r in range(1, repeats + 1):
        path = os.path.join(out, "real-%s-%d.json" % (p, r))
        if not os.path.exists(path):
            continue
        for run in json.load(open(path))["runs"]:
            per_rate.setdefault(run["request_rate"], []).append(run["summary"].get("goodput", 0.0))
            served.setdefault(p, {}).setdefault(run["request_rate"], []).append(run["summary"]["request_throughput"])
    rows[p] = per_rate
    rates = rates or sorted(per_rate)
print("| policy | " + " | ".join("%g req/s" % x for x in rates) + " |")
print("|---" * (len(rates) + 1) + "|")
for p in policies:
    cells = []
    for x in rates:
        v = rows[p].get(x, [])
        s = sim.get((p, float(x)))
        real = "%.2f [%.2f-%.2f]" % (statistics.median(v), min(v), max(v)) if v else "-"
        cells.append(real + (" / %.2f" % s if s is not None else ""))
    print("| %s | %s |" % (p, " | ".join(cells)))
print("\nRequest throughput, req/s: median of the real runs")
for p in policies:
    print("| %s | %s |" % (p, " | ".join("%.2f" % statistics.median(served.get(p, {}).get(x, [0.0])) for x in rates)))
PY
fi

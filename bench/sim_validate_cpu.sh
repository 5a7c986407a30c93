#!/usr/bin/env bash
# docs/simulate.md, "Validation": measures a step profile of one CPU shape, then runs the
# variance, latency and interference workloads (small, scaled down) through `bench offline`
# and through `simulate --cost-model profile:` with that profile, every shipped policy,
# and prints the figures side by side (bench/sim_validate.py).
#
#   bench/sim_validate_cpu.sh SHAPE [OUT_DIR]     e.g. bench-20M, bench-110M
# Environment: INFLIGHT (default build/bin/inflight), QUIET (a wrapper for each timed
#   step, e.g. /work/figs/quiet.sh), WORKLOADS ("variance latency interference"),
#   PROMPTS (variance and latency requests, 64), RATE (latency requests/s: 20 for
#   bench-20M, 4 otherwise), PROFILE (use this profile instead of measuring one), THREADS
#   (engine.threads of both, default 1: with 2 compute threads on a 2-core machine the
#   engine's own threads preempt the compute team and the steps are far slower than alone).
#   PROFILE=engine: instead of timing the backend alone over a grid, record the steps of
#   the real engine (`bench offline --record-steps`) on each workload with another seed
#   (1: other requests than the validation's), every policy, and fit them together
#   (`bench profile --refit`); simulate then adds no engine overhead of its own.
#   PROFILE=engine-each: the same, but each workload's own steps, recorded right before
#   its validation (the machine as it is then), make its profile.
#   REAL_RUNS (default 1): real runs per workload; the simulation is compared with their
#   median, and their own spread is printed (the machine's noise).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
shape=${1:?shape (bench-20M or bench-110M)}
out=${2:-$here/build/sim-validate}
bin=${INFLIGHT:-$here/build/bin/inflight}
quiet=${QUIET:-}
workloads=${WORKLOADS:-"variance latency interference"}
prompts=${PROMPTS:-64}
if [ "$shape" = bench-20M ]; then rate=${RATE:-20}; else rate=${RATE:-4}; fi
config=$here/config/bench-20M.toml  # 512 MiB of KV, 64 sequences, 512-token budget
threads=${THREADS:-1}
real_runs=${REAL_RUNS:-1}
# Waits (up to 10 minutes) while other engine processes run on this machine: quiet.sh
# pauses builds and tests, not servers.
wait_idle() {
  for _ in $(seq 600); do pgrep -f "inflight serve" > /dev/null || return 0; sleep 1; done
}
mkdir -p "$out"
profile=${PROFILE:-$out/cpu-$shape.json}
# Records every step of the real engine on workload $1, seed 1, every policy.
record() {
  local rec=(--config "$config" --set engine.threads="$threads" --shape "$shape" --workload "$1" --policy all --seed 1
             --record-steps "$out/steps-$shape-$1.json")
  case $1 in
    variance) rec+=(--num-prompts "$prompts") ;;
    latency) rec+=(--num-prompts "$prompts" --request-rate "$rate") ;;
  esac
  wait_idle
  $quiet "$bin" bench offline "${rec[@]}" > "$out/steps-$shape-$1.txt" 2>&1
  tail -1 "$out/steps-$shape-$1.txt"
}
if [ "${PROFILE:-}" = engine ]; then
  profile=$out/engine-$shape.json
  recorded=()
  for w in $workloads; do
    record "$w"
    recorded+=("$out/steps-$shape-$w.json")
  done
  "$bin" bench profile --refit "$(IFS=,; echo "${recorded[*]}")" -o "$profile" | tail -2
elif [ "${PROFILE:-}" = engine-each ]; then
  :  # recorded per workload below
elif [ -z "${PROFILE:-}" ]; then
  wait_idle
  $quiet "$bin" bench profile --config "$config" --set engine.threads="$threads" --shape "$shape" --repeats 5 \
    -o "$profile" > "$out/profile-$shape.txt"
  tail -2 "$out/profile-$shape.txt"
fi
for w in $workloads; do
  if [ "${PROFILE:-}" = engine-each ]; then
    record "$w"
    profile=$out/steps-$shape-$w.json
  fi
  args=(--inflight "$bin" --config "$config" --set engine.threads="$threads" --shape "$shape" --profile "$profile"
        --workload "$w" --out "$out" --real-runs "$real_runs")
  case $w in
    variance) args+=(--num-prompts "$prompts") ;;
    latency) args+=(--num-prompts "$prompts" --request-rate "$rate") ;;
  esac
  wait_idle
  $quiet python3 "$here/bench/sim_validate.py" "${args[@]}" | tee "$out/$shape-$w.md"
done

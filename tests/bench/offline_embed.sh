#!/usr/bin/env bash
# `inflight bench offline --workload embed`, alone and with --generations: every input is
# embedded in both runs (the same count) and, with 3 generations alongside, exactly 3 x 128
# tokens are generated and a rate and TPOT above zero are printed.
# Usage: offline_embed.sh INFLIGHT PLUGIN_DIR
set -u
inflight=${1:?inflight binary}
plugins=${2:?plugin dir}
run() {
  INFLIGHT_PLUGIN_DIR="$plugins" "$inflight" bench offline --workload embed --policy fcfs --num-prompts 1 \
    --set model.format=dummy --set engine.threads=1 "$@" 2> /dev/null || { echo "FAIL: bench offline $* exited $?"; exit 1; }
}
alone=$(run) || { echo "$alone"; exit 1; }
mixed=$(run --generations 3) || { echo "$mixed"; exit 1; }
echo "$alone"; echo "$mixed"
# Row: policy cache budget inputs/s tokens/s cached lat_p50 lat_p99 batch steps
rate() { echo "$1" | awk '$1 == "fcfs" && $4 + 0 > 0 && $5 + 0 >= $4 + 0 { print "ok" }'; }
[ "$(rate "$alone")" = ok ] || { echo "FAIL: no embedding rate when alone"; exit 1; }
[ "$(rate "$mixed")" = ok ] || { echo "FAIL: no embedding rate beside generations"; exit 1; }
inputs() { echo "$1" | sed -n 's/^workload embed ([a-z]*), \([0-9]*\) requests x \([0-9]*\) inputs.*/\1 \2/p'; }
[ -n "$(inputs "$alone")" ] && [ "$(inputs "$alone")" = "$(inputs "$mixed")" ] ||
  { echo "FAIL: the runs embedded different inputs"; exit 1; }
echo "$alone" | grep -q "alongside" && { echo "FAIL: a generation row without --generations"; exit 1; }
echo "$mixed" | awk '/alongside: 3 generations, 384 tokens, / {
    for (i = 1; i <= NF; ++i) { if ($i == "tokens/s,") rate = $(i - 1); if ($i == "TPOT") tpot = $(i + 1) }
    if (rate + 0 > 0 && tpot + 0 > 0) ok = 1 }
  END { if (!ok) { print "FAIL: expected 3 generations of 128 tokens with a rate and TPOT"; exit 1 } }' || exit 1
echo "ok: every input embedded alone and beside 3 generations of 128 tokens"

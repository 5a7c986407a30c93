#!/usr/bin/env bash
# `inflight bench offline --workload structured` on the dummy model (a few requests): one
# row with both throughputs, their ratio, every request finished by the grammar or by
# length, and grammar masks timed. Then `inflight bench grammar` over stories260K's
# 512-token vocabulary: every schema compiles, masks are timed, and every walk that
# finished is valid JSON.
# Usage: offline_structured.sh INFLIGHT PLUGIN_DIR SHARED_DIR
# The second part is skipped (77) without ../shared, failed when CI=true.
set -u
inflight=${1:?inflight binary}
plugins=${2:?plugin dir}
shared=${3:?shared dir}

out=$(INFLIGHT_PLUGIN_DIR="$plugins" "$inflight" bench offline --workload structured --policy fcfs --num-prompts 6 \
  --cap 32 --set model.format=dummy --set engine.threads=1 2> /dev/null) || { echo "FAIL: bench offline exited $?"; exit 1; }
echo "$out"
# Row: run constrained unconstrained ratio target tokens stop length ok notjson cut mask_mean mask_p99
echo "$out" | awk '
  $1 == "fcfs" { ++rows
    if ($2 + 0 <= 0 || $3 + 0 <= 0) bad = bad "no throughput; "
    if ($4 !~ /^[0-9.]+x$/) bad = bad "no ratio; "
    if ($7 + $8 != 6) bad = bad "stop + length = " $7 + $8 " of 6 requests; "
    if ($12 + 0 <= 0) bad = bad "no mask time; " }
  END {
    if (rows != 1) { print "FAIL: expected one fcfs row, got " rows + 0; exit 1 }
    if (bad != "") { print "FAIL: " bad; exit 1 }
  }' || exit 1
echo "$out" | grep -q "^compile (cold, schema to grammar, 5 per schema): p50 [0-9.]* ms" || { echo "FAIL: no compile line"; exit 1; }

tok="$shared/models/stories260K/tok512.bin"
if [ ! -f "$tok" ]; then
  if [ "${CI:-}" = "true" ]; then echo "FAIL: missing shared test data $tok (CI=true)"; exit 1; fi
  echo "SKIP: no $tok"; exit 77
fi
out=$("$inflight" bench grammar --tokenizer "$tok" --walks 4 --compiles 2 --max-steps 300 --seed 1) ||
  { echo "FAIL: bench grammar exited $?"; exit 1; }
echo "$out"
# Row: schema positions compile_p50 compile_p99 index_ms mask_mean mask_p50 mask_p99 steps walks finished valid
echo "$out" | awk '
  $1 == "all" { ++rows
    if ($6 + 0 <= 0 || $9 + 0 <= 0) bad = bad "no mask time or steps; "
    if ($10 != 24) bad = bad "expected 24 walks, got " $10 "; "
    if ($12 != $11) bad = bad $11 " walks finished but " $12 " are JSON; " }
  END {
    if (rows != 1) { print "FAIL: expected one all row"; exit 1 }
    if (bad != "") { print "FAIL: " bad; exit 1 }
  }' || exit 1
echo "$out" | grep -q "^targets: mask mean" || { echo "FAIL: no targets line"; exit 1; }
echo "ok: structured offline run and grammar bench"

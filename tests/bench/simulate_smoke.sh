#!/usr/bin/env bash
# `inflight simulate` on a tiny workload: one row per policy, the same figures on a
# second run, goodput and every request in the JSON, one row per sweep value, and bad
# input refused with a message. Usage: simulate_smoke.sh INFLIGHT PLUGIN_DIR OUT_DIR
set -u
inflight=${1:?inflight binary}
plugins=${2:?plugin dir}
dir=${3:?output dir}
mkdir -p "$dir"
json="$dir/simulate_smoke.json"
fail() { echo "FAIL: $*"; exit 1; }

sim() { "$inflight" simulate --plugin-dir "$plugins" --shape llama-3.2-1b --workload variance \
  --num-prompts 24 "$@" 2> "$dir/simulate_smoke.err"; }

out=$(sim --gpu h100 --policy fcfs,splitfuse --request-rate 20 --slo-ttft 200 --json "$json") \
  || { cat "$dir/simulate_smoke.err"; fail "simulate exited $?"; }
echo "$out"
rows=$(echo "$out" | awk '$1 == "fcfs" || $1 == "splitfuse"' | wc -l)
[ "$rows" -eq 2 ] || fail "expected 2 policy rows, got $rows"
again=$(sim --gpu h100 --policy fcfs,splitfuse --request-rate 20 --slo-ttft 200) || fail "second run exited $?"
[ "$out" = "$again" ] || fail "a second run with the same seed printed other figures"
[ "$(grep -c '"policy"' "$json")" -eq 2 ] || fail "the JSON does not hold two runs"
grep -q '"goodput"' "$json" || fail "the JSON has no goodput"
[ "$(grep -c '"ttft_s"' "$json")" -eq 48 ] || fail "the JSON does not hold every request of both runs"

sweep=$(sim --policy fcfs --sweep request-rate=5,50) || fail "sweep exited $?"
echo "$sweep"
[ "$(echo "$sweep" | awk '$1 == "fcfs"' | wc -l)" -eq 2 ] || fail "expected one row per sweep value"
echo "$sweep" | awk '$1 == "fcfs" { v[NR] = $2 } END { exit !(length(v) == 2) }' || fail "sweep values missing"

budgets=$(sim --policy fcfs --sweep max_num_batched_tokens=64,512 | awk '$1 == "fcfs" { printf "%s/%s ", $2, $3 }') \
  || fail "budget sweep exited $?"
[ "$budgets" = "64/64 512/512 " ] || fail "expected rows for budgets 64 and 512, got '$budgets'"

if sim --policy fcfs --gpu h1000 > /dev/null; then fail "an unknown GPU was accepted"; fi
grep -q "unknown GPU" "$dir/simulate_smoke.err" || fail "no message for an unknown GPU"
if sim --policy fcfs --sweep colour=1,2 > /dev/null; then fail "an unknown sweep key was accepted"; fi
grep -q "unknown key" "$dir/simulate_smoke.err" || fail "no message for an unknown sweep key"
echo "ok: simulate printed its rows, repeated its figures and refused bad input"

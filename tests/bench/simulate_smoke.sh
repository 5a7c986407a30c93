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

# Replicas behind the router: one row for one replica, one per routing policy for two;
# two sweeps give every combination; a target gets a meets column and the answer line.
reps=$(sim --policy fcfs --request-rate 50 --sweep replicas=1,2 --route-policy round_robin,prefix \
  --target ttft-p99=100000 --json "$dir/replicas.json") || { cat "$dir/simulate_smoke.err"; fail "replicas exited $?"; }
echo "$reps"
[ "$(echo "$reps" | awk '$1 == "fcfs" { printf "%s/%s ", $2, $3 }')" = "1/- 2/round_robin 2/prefix " ] ||
  fail "expected rows for 1 replica, and 2 under round_robin and prefix"
[ "$(echo "$reps" | awk '$1 == "fcfs" && $NF == "yes"' | wc -l)" -eq 3 ] || fail "every run meets a 100 s TTFT"
echo "$reps" | grep -q "met by 3 of 3 runs; the fewest replicas: 1 (policy fcfs)" || fail "no answer line"
python3 - "$dir/replicas.json" << 'PY' || fail "the JSON does not hold each replica's share"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
two = [r for r in runs if r["replicas"] == 2]
assert len(two) == 2 and all(sum(p["routed"] for p in r["per_replica"]) == 24 for r in two)
assert all(len(r["replica_of"]) == 24 and set(r["replica_of"]) == {0, 1} for r in two)
assert all(r["meets_targets"] for r in runs) and "per_replica" not in runs[0]
PY
grid=$(sim --policy fcfs --sweep replicas=1,2 --sweep max_num_batched_tokens=64,512) || fail "two sweeps exited $?"
[ "$(echo "$grid" | awk '$1 == "fcfs" { printf "%s/%s/%s ", $2, $3, $4 }')" = \
  "1/64/- 1/512/- 2/64/least_load 2/512/least_load " ] || fail "two sweeps did not give every combination: $grid"
if sim --policy fcfs --replicas 2 --route-policy nope > /dev/null; then fail "an unknown routing policy was accepted"; fi
grep -q "route-policy nope" "$dir/simulate_smoke.err" || fail "no message for an unknown routing policy"
if sim --policy fcfs --target ttft=5 > /dev/null; then fail "a malformed target was accepted"; fi
grep -q "METRIC-pNN=MS" "$dir/simulate_smoke.err" || fail "no message for a malformed target"
if sim --policy fcfs --sweep replicas=1 --sweep replicas=2 > /dev/null; then fail "a key swept twice was accepted"; fi
if sim --policy fcfs --replicas 0 > /dev/null; then fail "0 replicas were accepted"; fi
# Plots, as bench serve draws them: latency CDFs, and throughput against latency for a
# sweep of one policy.
sim --policy fcfs --sweep request-rate=5,50 --plot "$dir/plots" > /dev/null || { cat "$dir/simulate_smoke.err"; fail "--plot exited $?"; }
for png in ttft_cdf tpot_cdf throughput_vs_ttft throughput_vs_tpot; do
  [ -s "$dir/plots/$png.png" ] || fail "--plot drew no $png.png"
done
grep -q "rate=50" "$dir/plots/plots.gp" || fail "the plots do not label the runs by their sweep value"
# A JSONL trace: its requests at its arrival times (ids or lengths only), unless a rate is asked.
printf '%s\n' '{"prompt": [5, 6, 7, 8], "output_len": 4, "arrival_s": 0.5}' \
  '{"input_len": 40, "output_len": 6, "arrival_s": 0.1}' '{"input_len": 100, "max_tokens": 3, "arrival_s": 1.25}' \
  > "$dir/trace.jsonl"
tsim() { "$inflight" simulate --plugin-dir "$plugins" --shape llama-3.2-1b --policy fcfs --dataset-path "$dir/trace.jsonl" \
  "$@" 2> "$dir/simulate_smoke.err"; }
tsim --json "$dir/trace.json" > /dev/null || { cat "$dir/simulate_smoke.err"; fail "simulate of a trace exited $?"; }
python3 - "$dir/trace.json" << 'PY' || fail "the trace's requests did not arrive at its times with its lengths"
import json, sys
doc = json.load(open(sys.argv[1]))
got = [(r["start_s"], r["prompt_tokens"], r["output_tokens"]) for r in doc["runs"][0]["requests"]]
assert doc["workload"] == "trace" and got == [(0.5, 4, 4), (0.1, 40, 6), (1.25, 100, 3)], got
PY
tsim --request-rate 100 --json "$dir/trace-rate.json" > /dev/null || fail "simulate of a trace at a rate exited $?"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['runs'][0]['requests']; sys.exit(0 if max(x['start_s'] for x in r) < 0.5 else 1)" \
  "$dir/trace-rate.json" || fail "--request-rate did not replace the trace's arrival times"
# How requests end: EOS and a stop string below a higher limit, a client's cancel, the
# admission gate's 429s; and what the trace loader refuses.
printf '%s\n' '{"input_len": 20, "output_len": 4, "max_tokens": 100}' \
  '{"input_len": 20, "output_len": 4, "max_tokens": 100, "stop": true}' \
  '{"input_len": 20, "output_len": 5000, "cancel_after_s": 0.01}' '{"input_len": 20, "output_len": 3}' \
  > "$dir/endings.jsonl"
"$inflight" simulate --plugin-dir "$plugins" --shape llama-3.2-1b --policy fcfs --dataset-path "$dir/endings.jsonl" \
  --json "$dir/endings.json" > /dev/null 2> "$dir/simulate_smoke.err" || { cat "$dir/simulate_smoke.err"; fail "simulate of endings exited $?"; }
python3 - "$dir/endings.json" << 'PY' || fail "the trace's endings were not simulated"
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
got = [(r["finish_reason"], r["output_tokens"]) for r in run["requests"]]
assert got[0] == ("stop", 4) and got[1] == ("stop", 4) and got[3] == ("length", 3), got
assert got[2][0] == "cancelled" and 0 < got[2][1] < 5000, got
assert run["cancelled"] == 1 and run["rejected"] == 0, run
PY
printf '%s\n' '{"input_len": 20, "output_len": 4, "stop": true}' > "$dir/bad-stop.jsonl"
if "$inflight" simulate --plugin-dir "$plugins" --policy fcfs --dataset-path "$dir/bad-stop.jsonl" > /dev/null 2> "$dir/simulate_smoke.err"; then
  fail "a stop without a higher limit was accepted"
fi
grep -q '"stop": true needs "max_tokens"' "$dir/simulate_smoke.err" || fail "no message for a stop without a limit"
ends=$(sim --policy orca --max-tokens 4000 --json "$dir/max-tokens.json") || { cat "$dir/simulate_smoke.err"; fail "--max-tokens exited $?"; }
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['runs'][0]['requests']; sys.exit(0 if all(x['finish_reason']=='stop' for x in r) else 1)" \
  "$dir/max-tokens.json" || fail "--max-tokens 4000: not every output ended on its own"
if sim --policy fcfs --stop-strings > /dev/null; then fail "--stop-strings without --max-tokens was accepted"; fi
# A run that lost requests says so beside its throughput, after its tables, and in its
# exit status (3) unless --allow-failures.
gate=$(sim --policy fcfs --admission serve --set server.max_waiting_requests=4 --json "$dir/gate.json")
rc=$?
[ "$rc" = 3 ] || { cat "$dir/simulate_smoke.err"; fail "a run with 20 refused requests exited $rc, not 3"; }
echo "$gate"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['runs'][0]; s=r['summary']; sys.exit(0 if r['rejected'] == 20 and s['completed'] == 4 and s['refused'] == 20 and s['failures'][0]['status'] == 429 and r['requests'][23]['code'] == 'queue_full' else 1)" \
  "$dir/gate.json" || fail "--admission serve with 4 waiting requests did not refuse 20 of 24 at t = 0, or the JSON does not say so"
grep -q "20 x" "$dir/simulate_smoke.err" || fail "the refusals were not reported"
grep -q "fcfs: 20 of 24 requests did not complete (20 refused)" "$dir/simulate_smoke.err" || fail "no verdict on the lost requests"
# the table's counts: done 4, refused 20 (columns after the budget)
[ "$(echo "$gate" | awk '$1 == "fcfs" { print $4 "/" $5 "/" $6 "/" $7 "/" $9 }')" = "4/20/0/0/0" ] ||
  fail "the table does not show 4 done and 20 refused"
sim --policy fcfs --admission serve --set server.max_waiting_requests=4 --allow-failures > /dev/null ||
  fail "--allow-failures did not exit 0"
# --admission offline admits every request and lets it run, whatever the server's limits.
sim --policy fcfs --set server.max_waiting_requests=1 --set server.max_waiting_tokens=100 \
  --set server.max_queue_time_s=0.001 --set server.request_timeout_s=0.01 --json "$dir/nogate.json" > /dev/null ||
  { cat "$dir/simulate_smoke.err"; fail "--admission offline lost requests under tight server limits"; }
python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['runs'][0]['summary']; sys.exit(0 if s['completed'] == 24 else 1)" \
  "$dir/nogate.json" || fail "--admission offline did not complete every request"
# ... and --admission serve keeps the queue time limit: timed-out requests, counted as such.
sim --policy fcfs --admission serve --set server.max_queue_time_s=0.001 --request-rate 1000 --json "$dir/qt.json" > /dev/null
[ $? = 3 ] || fail "queue time-outs did not end the command with 3"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['runs'][0]; s=r['summary']; t=[x for x in r['requests'] if not x['success']]; sys.exit(0 if s['timed_out'] == len(t) > 0 and all(x['status'] == 429 and x['code'] == 'queue_timeout' for x in t) else 1)" \
  "$dir/qt.json" || fail "queue time-outs are not 429 queue_timeout, counted as timed out"
# Every argument is checked before the first run, naming the option.
for bad in "--request-rate nan" "--request-rate 0" "--num-prompts -3" "--num-prompts 0" "--burstiness nan" \
  "--cancel-after nan" "--policy fcfs,nosuchpolicy"; do
  # shellcheck disable=SC2086
  if sim $bad > /dev/null; then fail "$bad was accepted"; fi
  opt=${bad%% *}
  grep -q -- "$opt" "$dir/simulate_smoke.err" || fail "the message for $bad does not name $opt"
  if grep -q "requests, rate" "$dir/simulate_smoke.err"; then fail "$bad: a run started before the check"; fi
done
# The rerank workload: calls of scoring requests, figures per call.
rr=$("$inflight" simulate --plugin-dir "$plugins" --shape qwen3-0.6b --workload rerank --size small --num-prompts 2 \
  --policy fcfs,splitfuse --json "$dir/rerank.json" 2> "$dir/simulate_smoke.err") || { cat "$dir/simulate_smoke.err"; fail "simulate rerank exited $?"; }
echo "$rr"
[ "$(echo "$rr" | awk '($1 == "fcfs" || $1 == "splitfuse") && $4 == 2' | wc -l)" -eq 2 ] || fail "expected 2 rerank rows of 2 calls"
python3 - "$dir/rerank.json" << 'PY' || fail "the rerank JSON does not hold its calls"
import json, sys
for run in json.load(open(sys.argv[1]))["runs"]:
    rr = run["rerank"]
    assert rr["calls"] == 2 and rr["documents"] == 200 and rr["failed_calls"] == 0, rr
    assert len(rr["call_latency_s"]) == 2 and all(x > 0 for x in rr["call_latency_s"]), rr
    assert rr["cached_tokens"] > 0, rr  # each call's documents share its prefix
    assert all(r["output_tokens"] == 0 for r in run["requests"])
PY
"$inflight" simulate --plugin-dir "$plugins" --shape qwen3-0.6b --workload rerank --size small --num-prompts 2 \
  --policy fcfs --max-concurrency 1 --json "$dir/rerank-closed.json" > /dev/null 2> "$dir/simulate_smoke.err" ||
  { cat "$dir/simulate_smoke.err"; fail "simulate rerank --max-concurrency 1 exited $?"; }
python3 - "$dir/rerank-closed.json" << 'PY' || fail "--max-concurrency 1 did not send the second call after the first"
import json, sys
req = json.load(open(sys.argv[1]))["runs"][0]["requests"]
end0 = max(r["start_s"] + r["e2el_s"] for r in req[:100])
assert all(abs(r["start_s"] - end0) < 1e-9 for r in req[100:]), (end0, req[100]["start_s"])
PY
if "$inflight" simulate --plugin-dir "$plugins" --workload rerank --max-tokens 5 > /dev/null 2> "$dir/simulate_smoke.err"; then
  fail "--max-tokens was accepted for rerank"
fi
printf '%s\n' '{"prompt": "text needs a tokenizer"}' > "$dir/trace-text.jsonl"
if "$inflight" simulate --plugin-dir "$plugins" --policy fcfs --dataset-path "$dir/trace-text.jsonl" > /dev/null 2> "$dir/simulate_smoke.err"; then
  fail "a text prompt was simulated"
fi
grep -q "token ids" "$dir/simulate_smoke.err" || fail "no message for a text prompt in a trace"
if sim --policy fcfs --gpu h1000 > /dev/null; then fail "an unknown GPU was accepted"; fi
grep -q "unknown GPU" "$dir/simulate_smoke.err" || fail "no message for an unknown GPU"
if sim --policy fcfs --sweep colour=1,2 > /dev/null; then fail "an unknown sweep key was accepted"; fi
grep -q "unknown key" "$dir/simulate_smoke.err" || fail "no message for an unknown sweep key"
# The profile cost model: a tiny measured profile, the shipped CPU profile, and a bad file.
src=$(cd "$(dirname "$0")/../.." && pwd)
"$inflight" bench profile --shape bench-20M --prefill 0,16,32 --prefill-seqs 1,2 --decode 0,1,4 --context 8,64 \
  --repeats 1 --knots 24 -o "$dir/tiny_profile.json" > "$dir/profile.out" 2>&1 || { cat "$dir/profile.out"; fail "bench profile exited $?"; }
grep -q '"format": "inflight-step-profile"' "$dir/tiny_profile.json" || fail "bench profile wrote no profile"
grep -q '"per_attention_pair_s"' "$dir/tiny_profile.json" || fail "the profile has no fit"
psim() { "$inflight" simulate --plugin-dir "$plugins" --workload variance --num-prompts 24 --policy fcfs "$@" \
  2> "$dir/simulate_smoke.err"; }
out=$(psim --cost-model "profile:$dir/tiny_profile.json") || { cat "$dir/simulate_smoke.err"; fail "simulate with a profile exited $?"; }
echo "$out" | grep -q "profile: bench-20M" || fail "the header does not name the profile"
out=$(psim --cost-model "profile:$src/profiles/cpu-bench-20M.json") || fail "the shipped profile did not load"
# Steps recorded inside the engine (bench offline --record-steps): a profile of source
# "engine", whose time per step already holds the engine's own (no overhead added).
"$inflight" bench offline --shape bench-20M --workload interference --policy fcfs,splitfuse \
  --record-steps "$dir/recorded.json" > "$dir/record.out" 2>&1 || { cat "$dir/record.out"; fail "bench offline --record-steps failed"; }
grep -q '"source": "engine"' "$dir/recorded.json" || fail "the recorded profile does not say its source"
grep -q '"seqs":\[\[' "$dir/recorded.json" || fail "the recorded profile has no step shapes"
out=$(psim --cost-model "profile:$dir/recorded.json") || { cat "$dir/simulate_smoke.err"; fail "simulate with recorded steps exited $?"; }
echo "$out" | grep -q "+ 0.000 ms engine overhead per step" || fail "recorded steps got an engine overhead added"
"$inflight" bench profile --refit "$dir/recorded.json,$dir/recorded.json" -o "$dir/merged.json" > "$dir/refit.out" 2>&1 ||
  { cat "$dir/refit.out"; fail "bench profile --refit of two recorded profiles exited $?"; }
n1=$(grep -c '"seconds"' "$dir/recorded.json"); n2=$(grep -c '"seconds"' "$dir/merged.json")
[ "$n2" -eq $(( 2 * n1 )) ] || fail "the merged profile holds $n2 steps, not twice $n1"
if "$inflight" bench profile --refit "$dir/recorded.json,$dir/tiny_profile.json" -o "$dir/mixed.json" > /dev/null 2>&1; then
  fail "a grid profile and recorded steps were merged"
fi
# bench offline counts what it lost beside its throughput too: a prompt longer than the
# context is refused by the engine (a failure), said after the table, and exit status 3.
printf '%s\n' '{"input_len": 20, "output_len": 4}' '{"input_len": 50000, "output_len": 4}' \
  '{"input_len": 30, "output_len": 4}' > "$dir/too-long.jsonl"
off=$("$inflight" bench offline --shape bench-20M --policy fcfs --dataset-path "$dir/too-long.jsonl" \
  --result-json "$dir/too-long.json" 2> "$dir/offline.err")
rc=$?
echo "$off"
[ "$rc" = 3 ] || { cat "$dir/offline.err"; fail "bench offline with a refused request exited $rc, not 3"; }
[ "$(echo "$off" | awk '$1 == "fcfs" { print $3 "/" $4 "/" $5 "/" $6 "/" $7 }')" = "2/0/0/0/1" ] ||
  fail "the bench offline table does not show 2 done and 1 failed"
grep -q "fcfs: 1 of 3 requests did not complete (1 failed)" "$dir/offline.err" || fail "bench offline: no verdict"
python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['policies']['fcfs']['summary']; sys.exit(0 if (s['completed'], s['other_failed']) == (2, 1) else 1)" \
  "$dir/too-long.json" || fail "bench offline's JSON was not written with the counts before the exit"
"$inflight" bench offline --shape bench-20M --policy fcfs --dataset-path "$dir/too-long.jsonl" --allow-failures \
  > /dev/null 2>&1 || fail "bench offline --allow-failures did not exit 0"
if "$inflight" bench offline --shape bench-20M --policy fcfs --num-prompts 0 > /dev/null 2> "$dir/offline.err"; then
  fail "bench offline --num-prompts 0 was accepted"
fi
grep -q -- "--num-prompts" "$dir/offline.err" || fail "no message naming --num-prompts"
# Replay: one run's recorded steps, in order; the same requests take them all.
"$inflight" bench offline --shape bench-20M --workload variance --num-prompts 24 --policy splitfuse \
  --record-steps "$dir/one-run.json" > "$dir/one-run.out" 2>&1 || { cat "$dir/one-run.out"; fail "bench offline --record-steps of one policy failed"; }
"$inflight" simulate --plugin-dir "$plugins" --workload variance --num-prompts 24 --policy splitfuse \
  --cost-model "replay:$dir/one-run.json" > /dev/null 2> "$dir/simulate_smoke.err" || { cat "$dir/simulate_smoke.err"; fail "simulate replay exited $?"; }
grep -Eq "splitfuse: ([0-9]+) of \1 steps took a recorded step of their shape, 0 another's" "$dir/simulate_smoke.err" ||
  { cat "$dir/simulate_smoke.err"; fail "the replay did not take every recorded step"; }
if "$inflight" simulate --plugin-dir "$plugins" --workload variance --num-prompts 24 --policy fcfs,splitfuse \
  --cost-model "replay:$dir/one-run.json" > /dev/null 2> "$dir/simulate_smoke.err"; then fail "a replay of two policies was accepted"; fi
if psim --cost-model "replay:$dir/tiny_profile.json" > /dev/null; then fail "a grid profile was replayed"; fi
grep -q "recorded in the engine" "$dir/simulate_smoke.err" || fail "no message for replaying a grid profile"
# The rerank workload against the real engine: the same steps and the same prefix-cache
# hits (each call's documents submitted together; the template's head shared by calls).
"$inflight" bench offline --config "$src/config/bench-20M.toml" --workload rerank --size small --num-prompts 2 \
  --policy fcfs --result-json "$dir/rerank-real.json" > "$dir/rerank-real.out" 2>&1 || { cat "$dir/rerank-real.out"; fail "bench offline rerank exited $?"; }
"$inflight" simulate --plugin-dir "$plugins" --config "$src/config/bench-20M.toml" --cost-model "profile:$src/profiles/cpu-bench-20M.json" \
  --workload rerank --size small --num-prompts 2 --policy fcfs --json "$dir/rerank-sim.json" > /dev/null 2> "$dir/simulate_smoke.err" ||
  { cat "$dir/simulate_smoke.err"; fail "simulate rerank with the CPU profile exited $?"; }
python3 - "$dir/rerank-real.json" "$dir/rerank-sim.json" << 'PY' || fail "simulated rerank steps or cache hits differ from the engine's"
import json, sys
real = json.load(open(sys.argv[1]))["runs"][0]
sim = json.load(open(sys.argv[2]))["runs"][0]
assert real["num_steps"] == sim["num_steps"], (real["num_steps"], sim["num_steps"])
assert real["num_cached_tokens"] == sim["rerank"]["cached_tokens"], (real["num_cached_tokens"], sim["rerank"]["cached_tokens"])
assert real["num_prompt_tokens"] == sim["rerank"]["prompt_tokens"], (real["num_prompt_tokens"], sim["rerank"]["prompt_tokens"])
PY
echo '{"format": "inflight-step-profile", "version": 1}' > "$dir/bad_profile.json"
if psim --cost-model "profile:$dir/bad_profile.json" > /dev/null; then fail "a bad profile was accepted"; fi
grep -q "bad_profile.json: step profile: 'device' is missing" "$dir/simulate_smoke.err" || fail "no clear message for a bad profile"
if psim --cost-model profile:/nonexistent.json > /dev/null; then fail "a missing profile was accepted"; fi
grep -q "cannot open /nonexistent.json" "$dir/simulate_smoke.err" || fail "no message for a missing profile"
echo "ok: simulate printed its rows, repeated its figures and refused bad input; bench profile wrote a profile simulate reads"

#!/usr/bin/env bash
# One GPU session's checks of the CUDA backend, most needed first, inside a time budget:
#   1. the [gpu] tests and the Hugging Face comparison (side by side: correctness only),
#   2. decode attention against its floor (inflight_gpu_attention_bench),
#   3. the engine with each decode kernel: variance (Llama-3.2-1B shape, static vs
#      splitfuse), procurement at STREAMS streams (default 1; Llama-3.1-8B shape) beside
#      the plan's floor, and interference (SHAPE, default Llama-3.2-1B, fcfs vs splitfuse).
# Pack here with tests/gpu/device-pack.sh BUILD DIR (DIR git-ignored, named in the device
# tool's carry), then on the GPU machine, from the repository root:
#   tests/gpu/device-checks.sh DIR OUT [budget_seconds] [steps]
# steps: any of tests,oracle,bench,variance,procurement,interference (default: all but
# interference). Figures land in OUT.
set -u
D=${1:?DIR}; OUT=${2:?OUT}; BUDGET=${3:-450}; STEPS=${4:-tests,oracle,bench,variance,procurement}; STREAMS=${STREAMS:-1}; SHAPE=${SHAPE:-llama-3.2-1b}
start=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - start))); }
want() { [[ ",$STEPS," == *",$1,"* ]]; }
mkdir -p /tmp/devlibs "$OUT" && tar -xJf "$D/.devlibs/libs.tar.xz" -C /tmp/devlibs
export LD_LIBRARY_PATH=/tmp/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export INFLIGHT_SHARED=$D/shared INFLIGHT_PLUGIN_DIR=$D/plugins
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
I="$D/bin/inflight"
one="--set engine.backend=cuda --set model.dtype=bfloat16 --set engine.max_num_seqs=256 --set engine.max_num_batched_tokens=2048"

if want tests || want oracle; then
  echo "== tests + oracle ($(date -u +%T))"
  if want tests; then
    (timeout 240 "$D/bin/inflight_gpu_tests" '[gpu]' >"$OUT/gpu_tests.txt" 2>&1; echo "exit $?" >>"$OUT/gpu_tests.txt") &
  fi
  if want oracle; then
    (PYTHONUNBUFFERED=1 timeout 240 python3 tests/gpu/hf_reference.py --build "$D" \
       --from "$D/shared/models/stories260K/stories260K.bin" >"$OUT/oracle.txt" 2>&1; echo "exit $?" >>"$OUT/oracle.txt") &
  fi
  wait
  if want tests; then tail -4 "$OUT/gpu_tests.txt"; fi
  if want oracle; then grep -vE '^\s*$' "$OUT/oracle.txt" | tail -7; fi
fi
if want bench; then
  echo "== decode attention ($(date -u +%T))"
  timeout 120 "$D/bin/inflight_gpu_attention_bench" 50 | tee "$OUT/attention_bench.txt"
fi
summary() {  # FILE POLICY LABEL
  python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))['policies'][sys.argv[2]]['summary']
print(f"  {sys.argv[3]} {sys.argv[2]}: {d['output_throughput']:.0f} out tok/s, TTFT p50 {d['ttft_ms']['median']:.1f} ms, "
      f"TPOT p50 {d['tpot_ms']['median']:.2f} ms")
PY
}
if want variance; then
  for k in grouped per_head; do
    policies=splitfuse; [ $k = grouped ] && policies=static,splitfuse
    [ "$(left)" -gt 90 ] || { echo "skipped: variance $k (budget)"; continue; }
    echo "== variance, llama-3.2-1b, $k decode ($(date -u +%T))"
    timeout $(($(left) - 20)) "$I" bench offline --shape llama-3.2-1b $one --set engine.cuda_decode_attention=$k \
      --workload variance --size full --cap 1536 --policy $policies --result-json "$OUT/variance_$k.json" >"$OUT/variance_$k.txt" 2>&1
    for p in ${policies//,/ }; do summary "$OUT/variance_$k.json" $p "$k" 2>/dev/null || tail -3 "$OUT/variance_$k.txt"; done
  done
fi
if want procurement; then
  for k in grouped per_head; do
    [ "$(left)" -gt 100 ] || { echo "skipped: procurement $k (budget)"; continue; }
    echo "== procurement, llama-3.1-8b, $STREAMS streams, $k decode ($(date -u +%T))"
    timeout $(($(left) - 10)) "$I" bench offline --shape llama-3.1-8b $one --set engine.cuda_decode_attention=$k \
      --workload procurement --size full --num-prompts $STREAMS --policy splitfuse --result-json "$OUT/procurement_$k.json" \
      >"$OUT/procurement_$k.txt" 2>&1
    summary "$OUT/procurement_$k.json" splitfuse "$k" 2>/dev/null || tail -3 "$OUT/procurement_$k.txt"
  done
  "$I" plan --shape llama-3.1-8b --gpu-memory 80GiB --context 2048 2>&1 | grep -iE 'floor' | head -4
fi
if want interference; then  # SplitFuse vs unchunked prefill at the same budget
  [ "$(left)" -gt 90 ] && {
    echo "== interference, $SHAPE ($(date -u +%T))"
    timeout $(($(left) - 10)) "$I" bench offline --shape $SHAPE $one --workload interference --size full \
      --policy fcfs,splitfuse --chunk 512 2>&1 | sed -n '/^interference:/,$p' | tee "$OUT/interference.txt"
  } || echo "skipped: interference (budget)"
fi
echo "== done ($(date -u +%T)), $(left) s of the budget left"

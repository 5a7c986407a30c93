#!/usr/bin/env bash
# One GPU session's checks of the CUDA backend, most needed first, inside a time budget:
#   1. the [gpu] tests and the Hugging Face comparison (stories260K with the default
#      kernels, bench-110M with the tensor-core prefill and decode kernels, and bench-110M
#      at q4_k_m with engine.cuda_weights = "file"), side by side,
#   2. decode and prefill attention against their floors (inflight_gpu_attention_bench),
#   3. the engine with each pair of attention kernels (KERNELS, PREFILL/DECODE pairs,
#      default "tiled/grouped mma/mma"): procurement at STREAMS streams (a list, default
#      1; Llama-3.1-8B shape) beside the plan's floor, interference (SHAPE, default
#      Llama-3.2-1B, fcfs vs splitfuse), and variance (Llama-3.2-1B shape, static vs
#      splitfuse),
#   4. quant: the Llama-3.1-8B shape at q4_k_m (model.weight_dtype), one stream of
#      procurement with the matrices expanded to bf16, kept in their blocks, and in FP8
#      (engine.cuda_weights = expand | file | fp8), beside the plan's q4_k floor,
#   5. simulate (not in the default steps): a step profile of the Llama-3.2-1B shape on
#      this GPU (`bench profile`, SIM_KERNELS, default mma/mma), then `simulate` with it
#      against the real engine, every policy, on SIM_WORKLOADS (default "variance latency
#      interference", full size; bench/sim_validate.py). The profile lands in OUT for
#      profiles/.
#   6. ncu (not in the default steps): a kernel time table of Llama-3.1-8B decode steps
#      (procurement, NCU_STREAMS streams, default "1 64"; about 3 steps each, after the
#      prefill), the mma/mma kernels: where a step's time goes beside the plan's floor.
# Pack here with tests/gpu/device-pack.sh BUILD DIR (DIR git-ignored, named in the device
# tool's carry), then on the GPU machine, from the repository root:
#   tests/gpu/device-checks.sh DIR OUT [budget_seconds] [steps]
# steps: any of tests,oracle,bench,procurement,interference,variance,quant,simulate,ncu (default: all
# but simulate and ncu), run in that order. Figures land in OUT.
set -u
D=${1:?DIR}; OUT=${2:?OUT}; BUDGET=${3:-450}; STEPS=${4:-tests,oracle,bench,procurement,interference,variance,quant}
STREAMS=${STREAMS:-1}; SHAPE=${SHAPE:-llama-3.2-1b}; KERNELS=${KERNELS:-tiled/grouped mma/mma}
kset() { echo "--set engine.cuda_prefill_attention=${1%/*} --set engine.cuda_decode_attention=${1#*/}"; }
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
    (PYTHONUNBUFFERED=1 timeout 240 python3 tests/gpu/hf_reference.py --build "$D" --from '' --shape bench-110M \
       --prefill-attention mma --decode-attention mma >"$OUT/oracle_110M_mma.txt" 2>&1; echo "exit $?" >>"$OUT/oracle_110M_mma.txt") &
    # Quantized weights in their blocks (engine.cuda_weights = "file") against the cpu backend and fp32.
    (PYTHONUNBUFFERED=1 timeout 240 python3 tests/gpu/hf_reference.py --build "$D" --from '' --shape bench-110M \
       --weight-dtype q4_k_m --cuda-weights file --fp8 >"$OUT/oracle_110M_q4_k_m.txt" 2>&1; echo "exit $?" >>"$OUT/oracle_110M_q4_k_m.txt") &
  fi
  wait
  if want tests; then tail -4 "$OUT/gpu_tests.txt"; fi
  if want oracle; then
    for f in oracle oracle_110M_mma oracle_110M_q4_k_m; do echo "-- $f"; grep -vE '^\s*$' "$OUT/$f.txt" | tail -8; done
  fi
fi
if want bench; then
  echo "== decode and prefill attention ($(date -u +%T))"
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
if want procurement; then
  for n in $STREAMS; do
    for k in $KERNELS; do
      f=procurement_${n}_${k/\//_}
      [ "$(left)" -gt 100 ] || { echo "skipped: procurement $n $k (budget)"; continue; }
      echo "== procurement, llama-3.1-8b, $n streams, $k ($(date -u +%T))"
      timeout $(($(left) - 10)) "$I" bench offline --shape llama-3.1-8b $one $(kset $k) --workload procurement --size full \
        --num-prompts $n --policy splitfuse --result-json "$OUT/$f.json" >"$OUT/$f.txt" 2>&1
      summary "$OUT/$f.json" splitfuse "$k" 2>/dev/null || tail -3 "$OUT/$f.txt"
    done
  done
  plan_gpu="--gpu-memory 80GiB"  # H100 SXM: 3.35 TB/s (the plan's default); H200: 4.8 TB/s
  nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && plan_gpu="--gpu-memory 141GiB --bandwidth 4.8TB/s"
  "$I" plan --shape llama-3.1-8b $plan_gpu --context 2048 2>&1 | grep -E 'floor|^ +(1|64) ' | head -6
fi
if want interference; then  # SplitFuse vs unchunked prefill at the same budget
  for k in $KERNELS; do
    [ "$(left)" -gt 90 ] || { echo "skipped: interference $k (budget)"; continue; }
    echo "== interference, $SHAPE, $k ($(date -u +%T))"
    timeout $(($(left) - 10)) "$I" bench offline --shape $SHAPE $one $(kset $k) --workload interference --size full \
      --policy fcfs,splitfuse --chunk 512 2>&1 | sed -n '/^interference:/,$p' | tee "$OUT/interference_${k/\//_}.txt"
  done
fi
if want variance; then
  for k in $KERNELS; do
    f=variance_${k/\//_}
    [ "$(left)" -gt 90 ] || { echo "skipped: variance $k (budget)"; continue; }
    echo "== variance, llama-3.2-1b, $k ($(date -u +%T))"
    timeout $(($(left) - 20)) "$I" bench offline --shape llama-3.2-1b $one $(kset $k) --workload variance --size full \
      --cap 1536 --policy static,splitfuse --result-json "$OUT/$f.json" >"$OUT/$f.txt" 2>&1
    for p in static splitfuse; do summary "$OUT/$f.json" $p "$k" 2>/dev/null || tail -3 "$OUT/$f.txt"; done
  done
fi
if want quant; then
  for wf in expand file fp8; do
    f=quant_q4_k_m_$wf
    [ "$(left)" -gt 120 ] || { echo "skipped: quant $wf (budget)"; continue; }
    echo "== quant, llama-3.1-8b q4_k_m, engine.cuda_weights=$wf, 1 stream ($(date -u +%T))"
    timeout $(($(left) - 10)) "$I" bench offline --shape llama-3.1-8b $one $(kset mma/mma) --set model.weight_dtype=q4_k_m \
      --set engine.cuda_weights=$wf --workload procurement --size full --num-prompts 1 --policy splitfuse \
      --result-json "$OUT/$f.json" >"$OUT/$f.txt" 2>&1
    summary "$OUT/$f.json" splitfuse "$wf" 2>/dev/null || tail -3 "$OUT/$f.txt"
  done
  plan_gpu="--gpu-memory 80GiB"
  nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && plan_gpu="--gpu-memory 141GiB --bandwidth 4.8TB/s"
  "$I" plan --shape llama-3.1-8b $plan_gpu --weight-dtype q4_k --context 2048 2>&1 | grep -E 'floor|^ +1 ' | head -4
fi
if want simulate; then
  sk=${SIM_KERNELS:-mma/mma}
  # An explicit KV size, so that the simulator's pool is the engine's.
  sim_sets="--set engine.kv_blocks=32768 $(kset $sk)"
  prof="$OUT/profile-$(nvidia-smi --query-gpu=name --format=csv,noheader | tr ' ' '-' | tr -cd 'A-Za-z0-9-')-llama-3.2-1b.json"
  echo "== simulate: step profile, llama-3.2-1b, $sk ($(date -u +%T))"
  timeout $(($(left) - 10)) "$I" bench profile --config config/gpu-8b.toml --shape llama-3.2-1b $sim_sets \
    --prefill 0 64 256 512 2048 --prefill-seqs 1 4 --decode 0 1 16 64 256 --context 256 1024 4096 \
    --knots 128 512 2048 --repeats 3 -o "$prof" > "$OUT/profile.txt" 2>&1
  tail -3 "$OUT/profile.txt"
  for w in ${SIM_WORKLOADS:-variance latency interference}; do
    [ "$(left)" -gt 60 ] || { echo "skipped: simulate $w (budget)"; continue; }
    echo "== simulate vs real, $w ($(date -u +%T))"
    extra=(); [ $w = latency ] && extra=(--request-rate ${SIM_RATE:-20} --num-prompts 300)
    [ $w = variance ] && extra=(--num-prompts 300)
    timeout $(($(left) - 10)) python3 bench/sim_validate.py --inflight "$I" --config config/gpu-8b.toml \
      --shape llama-3.2-1b --size full --profile "$prof" --workload $w "${extra[@]}" $sim_sets --out "$OUT/simval" \
      2>"$OUT/simval-$w.err" | tee "$OUT/simval-$w.md"
  done
fi
if want ncu; then
  NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  for n in ${NCU_STREAMS:-1 64}; do
    [ "$(left)" -gt 120 ] || { echo "skipped: ncu $n streams (budget)"; continue; }
    # Past the weight upload (about 600 conversion launches), the prefill steps (at most
    # 500 launches a step, 2,048 prompt tokens each) and the graph captures, then about 3
    # decode steps of 32 layers (about 420 launches each).
    skip=$(( (n * 1750 / 2048 + 1) * 500 + 2500 ))
    echo "== ncu, llama-3.1-8b decode, $n streams, launches $skip.. ($(date -u +%T))"
    timeout $(($(left) - 10)) "$NCU" --metrics gpu__time_duration.sum --print-summary per-kernel --launch-skip $skip \
      --launch-count 1300 "$I" bench offline --shape llama-3.1-8b $one $(kset mma/mma) --workload procurement --size full \
      --num-prompts $n --policy splitfuse > "$OUT/ncu_decode_$n.txt" 2>&1
    python3 - "$OUT/ncu_decode_$n.txt" <<'PY'
import re, sys
rows = []
for b in re.split(r'\n  (?=\S)', open(sys.argv[1]).read()):
    m = re.match(r'(.*?)\s\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\).*Invocations (\d+)', b)
    a = re.search(r'gpu__time_duration.sum\s+(\S+)\s+[\d.,]+\s+[\d.,]+\s+([\d.,]+)', b)
    if m and a:
        us = float(a.group(2).replace(',', '')) * {'ns': 1e-3, 'us': 1, 'ms': 1e3}.get(a.group(1), 1)
        rows.append((us * int(m.group(2)), int(m.group(2)), us, m.group(1)[:90]))
total = sum(r[0] for r in rows) or 1
print(f"{sys.argv[1]}: {sum(r[1] for r in rows)} kernels, {total / 1e3:.2f} ms")
for t, k, us, name in sorted(rows, reverse=True)[:14]:
    print(f"  {t / 1e3:8.2f} ms {100 * t / total:5.1f}%  n={k:5d} avg {us:8.1f} us  {name}")
PY
  done
fi
echo "== done ($(date -u +%T)), $(left) s of the budget left"

#!/usr/bin/env bash
# Side by side on this machine, in one run: inflight's CPU backend against llama.cpp on
# the same GGUF file (random weights of the bench-110M shape, written as an f32 GGUF by
# `inflight make-model --format gguf` with the 32k llama2.c vocabulary, then quantized
# to TYPE by llama.cpp's llama-quantize), 128-token prompts and 128 generated tokens at
# 1, 16 and 32 streams, the same number of threads, both KV caches in KV_DTYPE.
#
#   scripts/compare-llamacpp.sh PEER_DIR [THREADS] [RUNS] [TYPE]
#
# TYPE: f32 (default) | f16 | bf16 | q8_0 | q4_0 | q4_k_m ... (llama-quantize's names, any
# case): both sides read the very file llama-quantize wrote.
# Environment: KV_DTYPE (f16, llama.cpp's default; f32 | bf16), NPP and NTG (prompt and
# generated tokens, 128 each), STREAMS (1,16,32; e.g. NPP=2048 STREAMS=1 for long prompts),
# MODEL_ARGS (make-model's shape and family, default "--shape bench-110M"; e.g.
# "--shape bench-110M --family qwen3moe --experts 32 --experts-per-token 4" for a mixture),
# GGUF (a file to read instead: both sides read it as it is; TYPE is then only a label),
# PROMPT (the engine's prompt text, which must be NPP tokens in the file's vocabulary; e.g.
# 127 letters for a byte-level one).
#
# PEER_DIR: a llama.cpp build made by ../shared/tools/build-llamacpp-peer.sh (with
# bin/llama-batched-bench and bin/llama-quantize). THREADS defaults to 2. RUNS (default 3) rounds
# of all three sides, one after the other, so that a noisy moment hits every side alike;
# each cell is the median of its RUNS figures. Uses build/bin/inflight (override with
# INFLIGHT_BIN) and writes its files under /tmp. Prints one table:
#   llama.cpp   llama-batched-bench -npp 128 -ntg 128 -npl 1,16,32 -fa on: S_TG, S_PP
#   forward     inflight bench forward: the backend alone, the same prefill and 128 decode steps
#   floor       the memory floor: read bandwidth measured by bench forward --floor, over the
#               bytes a decode step reads (every weight once, plus the KV cache)
#   engine      inflight generate --n-prompts N --ignore-eos: through the actors, N / TPOT
#               for generation, prompt tokens / TTFT for the prompt
set -euo pipefail

peer=${1:?usage: $0 PEER_DIR [THREADS] [RUNS] [TYPE]}
threads=${2:-2}
runs=${3:-3}
type=$(echo "${4:-f32}" | tr 'A-Z' 'a-z')
kv=${KV_DTYPE:-f16}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${INFLIGHT_BIN:-$root/build/bin/inflight}
tokenizer=${INFLIGHT_TOKENIZER:-$root/../shared/models/llama2c-tokenizer-32k/tokenizer.bin}
npp=${NPP:-128} ntg=${NTG:-128}
IFS=, read -r -a streams <<<"${STREAMS:-1,16,32}"
max_streams=$(printf '%s\n' "${streams[@]}" | sort -n | tail -1)

for f in "$bin" "$peer/bin/llama-batched-bench" "$peer/bin/llama-quantize" "$tokenizer"; do
  [ -e "$f" ] || { echo "compare-llamacpp: missing $f" >&2; exit 2; }
done
work=$(mktemp -d /tmp/compare-llamacpp.XXXXXX)
trap 'rm -rf "$work"' EXIT

started="$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "compare-llamacpp: $started" >&2
# The f32 file comes from inflight's writer: llama.cpp's llama2.c converter records a
# 128-token context, too short for these prompts.
model_args=${MODEL_ARGS:---shape bench-110M}
if [ -n "${GGUF:-}" ]; then
  gguf=$GGUF model_args="(the file $GGUF)"
else
  # shellcheck disable=SC2086
  "$bin" make-model $model_args --format gguf --tokenizer "$tokenizer" \
    --max-seq-len $((npp + ntg > 2048 ? npp + ntg : 2048)) --out "$work/model.gguf" >/dev/null 2>"$work/make-model.log" ||
    { cat "$work/make-model.log" >&2; exit 1; }
  gguf="$work/model.gguf"
fi
if [ "$type" != f32 ] && [ -z "${GGUF:-}" ]; then
  gguf="$work/model-$type.gguf"
  "$peer/bin/llama-quantize" "$work/model.gguf" "$gguf" "$(echo "$type" | tr 'a-z' 'A-Z')" >"$work/quantize.log" 2>&1 ||
    { tail -20 "$work/quantize.log" >&2; exit 1; }
fi
model="$gguf" source="the same GGUF file ($(du -h "$gguf" | cut -f1))"

# A prompt of exactly npp tokens: BOS and npp - 1 times " hello" (one token each).
prompt=${PROMPT:-"hello$(printf ' hello%.0s' $(seq 2 $((npp - 1))))"}
for r in $(seq 1 "$runs"); do
  echo "compare-llamacpp: round $r of $runs: llama.cpp ..." >&2
  "$peer/bin/llama-batched-bench" -m "$gguf" -npp $npp -ntg $ntg -npl "$(IFS=,; echo "${streams[*]}")" \
    -t "$threads" -fa on -ctk "$kv" -ctv "$kv" -c $((max_streams * (npp + ntg) + 256)) >"$work/llamacpp.$r.txt" 2>"$work/llamacpp.log" ||
    { tail -20 "$work/llamacpp.log" >&2; exit 1; }

  echo "compare-llamacpp: round $r of $runs: inflight bench forward ..." >&2
  "$bin" bench forward --model "$model" --kv-dtype "$kv" --batch "$(IFS=,; echo "${streams[*]}")" \
    --context $npp --steps $ntg --prefill $npp --threads "$threads" --floor >"$work/forward.$r.txt"

  for n in "${streams[@]}"; do
    echo "compare-llamacpp: round $r of $runs: inflight engine, $n streams ..." >&2
    "$bin" generate --model "$model" --set engine.kv_dtype="$kv" --prompt "$prompt" --n-prompts "$n" \
      --max-tokens $ntg --ignore-eos --temperature 0 --set engine.threads="$threads" \
      --set engine.max_num_batched_tokens=$((npp * max_streams)) --set engine.max_num_seqs=64 \
      --set engine.kv_memory=2GiB >/dev/null 2>"$work/engine.$n.$r.txt" || { cat "$work/engine.$n.$r.txt" >&2; exit 1; }
    grep -q "prompt tokens: $npp " "$work/engine.$n.$r.txt" ||
      { echo "compare-llamacpp: the prompt is not $npp tokens:" >&2; cat "$work/engine.$n.$r.txt" >&2; exit 1; }
  done
done

# llama-batched-bench rows: | PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | T s | S t/s |
llama_col() { awk -F'|' -v b="$1" -v col="$2" '$4+0 == b && $2+0 > 0 { gsub(/ /, "", $col); print $col }' "$3"; }
# bench forward rows: batch context step_ms tokens/s prefill_tokens/s
forward_col() { awk -v b="$1" -v col="$2" '$1 == b && $2 ~ /^[0-9]+$/ { print $col }' "$3"; }
bandwidth() { sed -n 's/^memory: \([0-9.]*\) GB\/s.*/\1/p' "$1"; }
engine_tg() { sed -n 's/.*TPOT: \([0-9.]*\) ms.*/\1/p' "$2" | awk -v n="$1" '{ printf "%.1f\n", n * 1000 / $1 }'; }
engine_pp() { sed -n 's/^TTFT: \([0-9.]*\) ms.*/\1/p' "$2" | awk -v p=$npp '{ printf "%.1f\n", p * 1000 / $1 }'; }
# The median of the figures on stdin, one per line (the lower middle one for even RUNS).
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
# rounds FUNCTION NAME ARGS...: FUNCTION ARGS... WORK/NAME.R.txt for every round R, median.
rounds() { local f=$1 file=$2; shift 2; for r in $(seq 1 "$runs"); do "$f" "$@" "$work/$file.$r.txt"; done | median; }
# engine_rounds FUNCTION N: the same over the engine's N-stream files.
engine_rounds() { local f=$1 n=$2; for r in $(seq 1 "$runs"); do "$f" "$n" "$work/engine.$n.$r.txt"; done | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }

declare -A tg_llama tg_forward tg_engine tg_floor
for n in "${streams[@]}"; do
  tg_llama[$n]=$(rounds llama_col llamacpp "$n" 9)
  tg_forward[$n]=$(rounds forward_col forward "$n" 4)
  tg_floor[$n]=$(rounds forward_col forward "$n" 6)
  tg_engine[$n]=$(engine_rounds engine_tg "$n")
done
pp_llama=$(rounds llama_col llamacpp "${streams[0]}" 7) pp_forward=$(rounds forward_col forward "${streams[0]}" 5)
pp_engine=$(engine_rounds engine_pp "${streams[0]}")

# row LABEL ARRAY PROMPT: one table row, a cell per stream count, then the prompt cell.
row() { local -n cells=$2; local line="| $1 |"; for n in "${streams[@]}"; do line+=" ${cells[$n]} |"; done; echo "$line $3 |"; }
# ratio_row LABEL A B PROMPT_A PROMPT_B
ratio_row() {
  local -n a=$2 b=$3; local line="| $1 |"
  for n in "${streams[@]}"; do line+=" $(ratio "${a[$n]}" "${b[$n]}") |"; done
  echo "$line $(ratio "$4" "$5") |"
}

echo
echo "make-model $model_args (random weights), weights $type, KV cache $kv; both read $source;" \
  "$npp-token prompts, $ntg generated tokens, $threads threads; tokens/s, median of $runs rounds"
echo "$(sed -n 's/^model: .*; //p' "$work/forward.1.txt" | head -1); $(sed -n 's/^weights: //p' "$work/forward.1.txt" | head -1);" \
  "started $started; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
echo
header="|"; rule="|---|"
for n in "${streams[@]}"; do header+=" $n stream$([ "$n" = 1 ] || echo s) |"; rule+="---|"; done
echo "| $header prompt ${streams[0]} x $npp |"; echo "$rule---|"
row "llama.cpp generation (S_TG) / prompt (S_PP)" tg_llama "$pp_llama"
row "inflight bench forward (backend alone)" tg_forward "$pp_forward"
row "inflight engine (generate --n-prompts N)" tg_engine "$pp_engine"
row "memory floor ($(rounds bandwidth forward) GB/s read)" tg_floor ""
ratio_row "bench forward / llama.cpp" tg_forward tg_llama "$pp_forward" "$pp_llama"
ratio_row "engine / llama.cpp" tg_engine tg_llama "$pp_engine" "$pp_llama"
ratio_row "engine / bench forward" tg_engine tg_forward "$pp_engine" "$pp_forward"
ratio_row "engine / memory floor" tg_engine tg_floor "" ""

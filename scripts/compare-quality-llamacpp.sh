#!/usr/bin/env bash
# Quantization quality side by side with llama.cpp, on the same GGUF files: stories260K
# (a trained model, so its next-token distributions mean something) converted to an f32
# GGUF by llama.cpp's own converter, then quantized by llama-quantize to each TYPE
# (ffn_down kept in F16: its 172-wide rows are no whole quantization blocks). For every
# file, the perplexity of a text and the KL divergence of its next-token distributions
# against the f32 file's, with top-1 agreement:
#   llama.cpp   llama-perplexity --kl-divergence-base (f32) / --kl-divergence (TYPE)
#   inflight    inflight perplexity --model TYPE.gguf --base-model f32.gguf
# Both score the second half of every CTX-token chunk of the text.
#
#   scripts/compare-quality-llamacpp.sh PEER_DIR [TYPES] [CTX]
#
# TYPES: comma-separated llama-quantize names (default
# F16,BF16,Q8_0,Q4_0,Q4_1,Q5_0,Q5_1,IQ4_NL,IQ4_XS,MXFP4,Q2_K,Q3_K_S,Q3_K_M,Q4_K_M,Q5_K_M,Q6_K).
# MXFP4 is llama-quantize's MXFP4_MOE with --pure: its own mix puts MXFP4 only in expert
# tensors (Q8_0 elsewhere), and these models have none.
# CTX: tokens per chunk (default 128, stories260K's context). The text is TEXT (default
# tests/data/stories.txt). Uses build/bin/inflight (override with INFLIGHT_BIN); writes
# under /tmp. Prints one table.
#
# MODEL=bench-110M: random weights of that shape instead (`inflight make-model --format
# gguf` with the 32k llama2.c vocabulary, INFLIGHT_TOKENIZER), whose 768 / 2048-wide rows
# are whole 256-value blocks, so the k-quant and IQ4_XS types are what the files hold
# (stories260K's 64-wide rows fall back to 32-value types). A random model's
# distributions only say whether the two sides agree. Default TYPES there
# Q2_K,Q3_K_S,Q3_K_M,IQ4_XS; CHUNKS (default 8 there, all for stories260K) caps the chunks.
set -euo pipefail

peer=${1:?usage: $0 PEER_DIR [TYPES] [CTX]}
model=${MODEL:-stories260K}
case "$model" in
  stories260K) default_types=F16,BF16,Q8_0,Q4_0,Q4_1,Q5_0,Q5_1,IQ4_NL,IQ4_XS,MXFP4,Q2_K,Q3_K_S,Q3_K_M,Q4_K_M,Q5_K_M,Q6_K
    chunks=${CHUNKS:-0} ;;
  bench-110M) default_types=Q2_K,Q3_K_S,Q3_K_M,IQ4_XS chunks=${CHUNKS:-8} ;;
  *) echo "compare-quality: MODEL is stories260K or bench-110M" >&2; exit 2 ;;
esac
IFS=, read -r -a types <<<"${2:-$default_types}"
ctx=${3:-128}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${INFLIGHT_BIN:-$root/build/bin/inflight}
models=${INFLIGHT_MODELS:-$root/../shared/models}
tokenizer=${INFLIGHT_TOKENIZER:-$models/llama2c-tokenizer-32k/tokenizer.bin}
text=${TEXT:-$root/tests/data/stories.txt}
threads=${THREADS:-2}

needed=("$bin" "$peer/bin/llama-perplexity" "$peer/bin/llama-quantize" "$text")
if [ "$model" = stories260K ]; then
  needed+=("$peer/gguf.sh" "$models/stories260K/stories260K.bin" "$models/stories260K/tok512.bin")
else
  needed+=("$tokenizer")
fi
for f in "${needed[@]}"; do
  [ -e "$f" ] || { echo "compare-quality: missing $f" >&2; exit 2; }
done
work=$(mktemp -d /tmp/compare-quality.XXXXXX)
trap 'rm -rf "$work"' EXIT

if [ "$model" = stories260K ]; then
  "$peer/gguf.sh" "$models/stories260K/stories260K.bin" "$models/stories260K/tok512.bin" "$work/f32.gguf" \
    >"$work/convert.log" 2>&1 || { tail -20 "$work/convert.log" >&2; exit 1; }
  # Its 172-wide FFN rows are no whole blocks of any type.
  quantize_args=(--tensor-type ffn_down=f16)
else
  "$bin" make-model --shape bench-110M --format gguf --tokenizer "$tokenizer" --out "$work/f32.gguf" \
    >"$work/convert.log" 2>&1 || { tail -20 "$work/convert.log" >&2; exit 1; }
  quantize_args=()
fi
chunk_args=()
[ "$chunks" -gt 0 ] && chunk_args=(--chunks "$chunks")
# perplexity LOG PATTERN ARGS...: llama-perplexity ARGS... into LOG, again (up to three
# times) when its log ends before PATTERN: its log lines are written by a thread of their
# own, and on a busy machine the process has exited before the last of them were.
perplexity() {
  local log=$1 pattern=$2; shift 2
  for try in 1 2 3; do
    "$peer/bin/llama-perplexity" "$@" >"$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }
    grep -q "$pattern" "$log" && return 0
  done
  echo "compare-quality: llama-perplexity's log ends before '$pattern' ($log)" >&2; exit 1
}
perplexity "$work/base.log" "Final estimate" -m "$work/f32.gguf" -f "$text" -c "$ctx" -t "$threads" \
  "${chunk_args[@]}" --kl-divergence-base "$work/base.kld"

# field FILE PATTERN: the first number after PATTERN in FILE.
field() { sed -n "s/.*$2[^0-9]*\([0-9][0-9.e+-]*\).*/\1/p" "$1" | head -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }

echo "$model, $(basename "$text"), chunks of $ctx tokens (the second half of each scored), $threads threads;" \
  "the same GGUF file on both sides"
echo
echo "| type | tensors | file | PPL llama.cpp | PPL inflight | mean KL llama.cpp | mean KL inflight | KL ratio | same top-1 llama.cpp | same top-1 inflight |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for type in "${types[@]}"; do
  q="$work/$type.gguf"
  options=() name=$type  # llama-quantize's name for TYPE, and its options
  [ "$type" = MXFP4 ] && options=(--pure) name=MXFP4_MOE
  "$peer/bin/llama-quantize" "${quantize_args[@]}" "${options[@]}" "$work/f32.gguf" "$q" "$name" \
    >"$work/quantize.$type.log" 2>&1 || { tail -20 "$work/quantize.$type.log" >&2; exit 1; }
  perplexity "$work/llamacpp.$type.log" "Same top p:" -m "$q" -c "$ctx" -t "$threads" "${chunk_args[@]}" \
    --kl-divergence-base "$work/base.kld" --kl-divergence
  # A file with a tensor type inflight does not read is a row that says so (its error
  # names the tensor and the type), not the end of the table.
  if ! "$bin" perplexity --model "$q" --base-model "$work/f32.gguf" -f "$text" --ctx "$ctx" --threads "$threads" \
    "${chunk_args[@]}" --json "$work/inflight.$type.json" >"$work/inflight.$type.log" 2>&1; then
    echo "| $type | | $(du -k "$q" | awk '{ printf "%d KB", $1 }') | $(field "$work/llamacpp.$type.log" "Mean PPL(Q)  ") |" \
      "refused: $(grep -m1 -o "has type [A-Z0-9_]*" "$work/inflight.$type.log" || tail -1 "$work/inflight.$type.log") |" \
      "$(field "$work/llamacpp.$type.log" "Mean    KLD:") | | | $(field "$work/llamacpp.$type.log" "Same top p:")% | |"
    continue
  fi
  # The matrices' types as inflight reads them (bench forward's "weights:" line).
  tensors=$("$bin" bench forward --model "$q" --batch 1 --context 8 --steps 1 --prefill 8 --threads "$threads" 2>/dev/null |
    sed -n 's/^weights: \([^,]*\),.*/\1/p')
  kl_llama=$(field "$work/llamacpp.$type.log" "Mean    KLD:")
  kl_inflight=$(jq -r .kl.mean "$work/inflight.$type.json")
  printf '| %s | %s | %s | %s | %.4f | %.6f | %.6f | %s | %s%% | %.3f%% |\n' "$type" "$tensors" \
    "$(du -k "$q" | awk '{ printf "%d KB", $1 }')" \
    "$(field "$work/llamacpp.$type.log" "Mean PPL(Q)  ")" "$(jq -r .perplexity "$work/inflight.$type.json")" \
    "$kl_llama" "$kl_inflight" "$(ratio "$kl_inflight" "$kl_llama")" \
    "$(field "$work/llamacpp.$type.log" "Same top p:")" "$(jq -r '.kl.same_top * 100' "$work/inflight.$type.json")"
done
echo
echo "f32 perplexity: llama.cpp $(field "$work/base.log" "Final estimate: PPL =")," \
  "inflight $(jq -r .base_perplexity "$work/inflight.${types[0]}.json")"

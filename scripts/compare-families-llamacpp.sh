#!/usr/bin/env bash
# Each model family and RoPE variant side by side with llama.cpp, on the same GGUF file:
# random weights of the bench-20M shape drawn as the family (`inflight make-model
# --format gguf --family F`, the 32k llama2.c vocabulary), f32 and quantized by
# llama-quantize to TYPE. inflight writes its next-token distributions over a text as
# llama.cpp's logits file (`inflight perplexity --save-logits`); llama-perplexity
# --kl-divergence then runs llama.cpp on the very same tokens and reports the KL
# divergence of its distributions from inflight's and how often both put the same token
# on top. Random weights are fine for agreement: their distributions are far from flat
# (the control row, two models of different seeds, agrees on almost no top token).
#
#   scripts/compare-families-llamacpp.sh PEER_DIR [TYPE] [CHUNKS]
#
# TYPE: a llama-quantize name (default Q4_K_M); CHUNKS: 128-token chunks of the text
# (default 8). Uses build/bin/inflight (INFLIGHT_BIN); writes under /tmp. Prints one table.
set -euo pipefail

peer=${1:?usage: $0 PEER_DIR [TYPE] [CHUNKS]}
type=${2:-Q4_K_M}
chunks=${3:-8}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${INFLIGHT_BIN:-$root/build/bin/inflight}
tokenizer=${INFLIGHT_TOKENIZER:-$root/../shared/models/llama2c-tokenizer-32k/tokenizer.bin}
text=${TEXT:-$root/tests/data/stories.txt}
threads=${THREADS:-2}
ctx=128

for f in "$bin" "$peer/bin/llama-perplexity" "$peer/bin/llama-quantize" "$tokenizer" "$text"; do
  [ -e "$f" ] || { echo "compare-families: missing $f" >&2; exit 2; }
done
work=$(mktemp -d /tmp/compare-families.XXXXXX)
trap 'rm -rf "$work"' EXIT

# field FILE PATTERN: the first number after PATTERN in FILE.
field() { sed -n "s/.*$2[^0-9]*\([0-9][0-9.e+-]*\).*/\1/p" "$1" | head -1; }

# llama KLD MODEL LOG: llama.cpp on MODEL against inflight's distributions in KLD (up to
# three tries: its log thread can lose the last lines on a busy machine).
llama() {
  for try in 1 2 3; do
    "$peer/bin/llama-perplexity" -m "$2" --kl-divergence-base "$1" --kl-divergence -c "$ctx" -t "$threads" \
      >"$3" 2>&1 || { tail -20 "$3" >&2; exit 1; }
    grep -q "Same top p:" "$3" && return 0
  done
  echo "compare-families: llama-perplexity's log ends early ($3)" >&2; exit 1
}

# inflight MODEL KLD: inflight's distributions of MODEL into KLD.
inflight() {
  "$bin" perplexity --model "$1" -f "$text" --ctx "$ctx" --chunks "$chunks" --threads "$threads" \
    --save-logits "$2" >"$2.log" 2>&1 || { tail -5 "$2.log" >&2; exit 1; }
}

echo "bench-20M shape (288 wide, 6 layers), random weights, 32k vocabulary; $chunks chunks of $ctx tokens of" \
  "$(basename "$text"), the second half of each scored; the same GGUF file on both sides"
echo
echo "| family | what | GGUF arch | f32: mean KL | f32: same top-1 | $type: mean KL | $type: same top-1 |"
echo "|---|---|---|---|---|---|---|"
rows=0
row() {
  local name=$1 what=$2 arch=$3; shift 3
  # Files named by number: llama.cpp's vocabulary loader looks up Phi-3's special tokens
  # when general.name (the file's stem) says "phi3", and this vocabulary has none.
  local m="$work/model$((rows += 1))"
  "$bin" make-model --shape bench-20M --format gguf --tokenizer "$tokenizer" --max-seq-len 512 "$@" \
    --out "$m.gguf" >/dev/null 2>"$m.make.log" || { cat "$m.make.log" >&2; exit 1; }
  "$peer/bin/llama-quantize" "$m.gguf" "$m.$type.gguf" "$type" >"$m.quantize.log" 2>&1 ||
    { tail -20 "$m.quantize.log" >&2; exit 1; }
  inflight "$m.gguf" "$m.kld"
  inflight "$m.$type.gguf" "$m.$type.kld"
  llama "$m.kld" "$m.gguf" "$m.llama.log"
  llama "$m.$type.kld" "$m.$type.gguf" "$m.$type.llama.log"
  echo "| $name | $what | $arch | $(field "$m.llama.log" "Mean    KLD:") | $(field "$m.llama.log" "Same top p:")% |" \
    "$(field "$m.$type.llama.log" "Mean    KLD:") | $(field "$m.$type.llama.log" "Same top p:")% |"
}
row llama "dense SwiGLU, interleaved Q/K rows" llama --family llama
row llama-linear "RoPE linear scaling x2" llama --family llama --rope-scaling linear:2
row qwen2 "q/k/v biases" qwen2 --family qwen2
row qwen3 "q/k norms" qwen3 --family qwen3
row qwen3-yarn "YaRN x4 over 64 original positions" qwen3 --family qwen3 --rope-scaling yarn:4:64
row mixtral "8 experts of 192, top 2, renormalised" "llama (experts)" --family mixtral
row qwen2moe "8 experts of 192, top 2, a gated shared expert of 768" qwen2moe --family qwen2moe
row qwen3moe "16 experts of 128, top 4, renormalised" qwen3moe --family qwen3moe --experts 16 --experts-per-token 4 --expert-hidden 128
row gemma "GeGLU, embeddings x sqrt(dim), tied" gemma --family gemma
row gemma2 "post-norms, soft-caps 50 / 30, a 32-key window on every second layer" gemma2 --family gemma2 --sliding-window 32
row gemma3 "q/k norms, a 32-key window on 5 of 6 layers (base 10000), linear x8 on the global one" gemma3 --family gemma3 --sliding-window 32 --rope-scaling linear:8
row phi3 "fused attn_qkv and gate/up rows" phi3 --family phi3
row phi3-longrope "+ LongRoPE over 64 original positions (drawn factors), 36 of 48 dimensions rotated" phi3 --family phi3 --rope-scaling longrope:64 --rope-dims 36
row gpt-oss "sinks, q/k/v/o biases, 8 biased experts of 192 (top 2), clamped SwiGLU, a 32-key window on every second layer" gpt-oss --family gpt-oss --sliding-window 32
# Control: inflight's distributions of one seed against llama.cpp on another's.
c="$work/control"
"$bin" make-model --shape bench-20M --format gguf --tokenizer "$tokenizer" --max-seq-len 512 --family qwen3moe \
  --seed 1 --out "$c.1.gguf" >/dev/null 2>&1
"$bin" make-model --shape bench-20M --format gguf --tokenizer "$tokenizer" --max-seq-len 512 --family qwen3moe \
  --seed 2 --out "$c.2.gguf" >/dev/null 2>&1
inflight "$c.1.gguf" "$c.kld"
llama "$c.kld" "$c.2.gguf" "$c.llama.log"
echo "| control | qwen3moe, seed 1 (inflight) against seed 2 (llama.cpp) | qwen3moe |" \
  "$(field "$c.llama.log" "Mean    KLD:") | $(field "$c.llama.log" "Same top p:")% | | |"

#!/usr/bin/env bash
# Side by side on this machine, in one run: inflight's CPU backend against llama.cpp on
# the same weights (random weights of the bench-110M shape, f32, as a llama2.c
# checkpoint; llama.cpp reads its own GGUF conversion of it), 128-token prompts and
# 128 generated tokens at 1, 16 and 32 streams, the same number of threads.
#
#   scripts/compare-llamacpp.sh PEER_DIR [THREADS] [RUNS]
#
# PEER_DIR: a llama.cpp build made by ../shared/tools/build-llamacpp-peer.sh (with
# bin/llama-batched-bench and gguf.sh). THREADS defaults to 2. RUNS (default 3) rounds
# of all three sides, one after the other, so that a noisy moment hits every side alike;
# each cell is the median of its RUNS figures. Uses build/bin/inflight (override with
# INFLIGHT_BIN) and writes its files under /tmp. Prints one table:
#   llama.cpp   llama-batched-bench -npp 128 -ntg 128 -npl 1,16,32 -fa on: S_TG, S_PP
#   forward     inflight bench forward: the backend alone, the same prefill and 128 decode steps
#   engine      inflight generate --n-prompts N --ignore-eos: through the actors, N / TPOT
#               for generation, prompt tokens / TTFT for the prompt
set -euo pipefail

peer=${1:?usage: $0 PEER_DIR [THREADS]}
threads=${2:-2}
runs=${3:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${INFLIGHT_BIN:-$root/build/bin/inflight}
tokenizer=${INFLIGHT_TOKENIZER:-$root/../shared/models/llama2c-tokenizer-32k/tokenizer.bin}
npp=128 ntg=128 streams=(1 16 32)

for f in "$bin" "$peer/bin/llama-batched-bench" "$peer/gguf.sh" "$tokenizer"; do
  [ -e "$f" ] || { echo "compare-llamacpp: missing $f" >&2; exit 2; }
done
work=$(mktemp -d /tmp/compare-llamacpp.XXXXXX)
trap 'rm -rf "$work"' EXIT

started="$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "compare-llamacpp: $started" >&2
"$bin" make-model --shape bench-110M --format llama2c --out "$work/model.bin" >/dev/null
"$peer/gguf.sh" "$work/model.bin" "$tokenizer" "$work/model.gguf" >"$work/convert.log" 2>&1 ||
  { cat "$work/convert.log" >&2; exit 1; }

# A prompt of exactly npp tokens: BOS and npp - 1 times " hello" (one token each).
prompt="hello$(printf ' hello%.0s' $(seq 2 $((npp - 1))))"
for r in $(seq 1 "$runs"); do
  echo "compare-llamacpp: round $r of $runs: llama.cpp ..." >&2
  "$peer/bin/llama-batched-bench" -m "$work/model.gguf" -npp $npp -ntg $ntg -npl "$(IFS=,; echo "${streams[*]}")" \
    -t "$threads" -fa on -c 8192 >"$work/llamacpp.$r.txt" 2>"$work/llamacpp.log" ||
    { tail -20 "$work/llamacpp.log" >&2; exit 1; }

  echo "compare-llamacpp: round $r of $runs: inflight bench forward ..." >&2
  "$bin" bench forward --model "$work/model.bin" --batch "$(IFS=,; echo "${streams[*]}")" --context $npp \
    --steps $ntg --prefill $npp --threads "$threads" >"$work/forward.$r.txt"

  for n in "${streams[@]}"; do
    echo "compare-llamacpp: round $r of $runs: inflight engine, $n streams ..." >&2
    "$bin" generate --model "$work/model.bin" --tokenizer "$tokenizer" --prompt "$prompt" --n-prompts "$n" \
      --max-tokens $ntg --ignore-eos --temperature 0 --set engine.threads="$threads" \
      --set engine.max_num_batched_tokens=$((npp * 32)) --set engine.max_num_seqs=64 \
      --set engine.kv_memory=1GiB >/dev/null 2>"$work/engine.$n.$r.txt" || { cat "$work/engine.$n.$r.txt" >&2; exit 1; }
    grep -q "prompt tokens: $npp " "$work/engine.$n.$r.txt" ||
      { echo "compare-llamacpp: the prompt is not $npp tokens:" >&2; cat "$work/engine.$n.$r.txt" >&2; exit 1; }
  done
done

# llama-batched-bench rows: | PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | T s | S t/s |
llama_col() { awk -F'|' -v b="$1" -v col="$2" '$4+0 == b && $2+0 > 0 { gsub(/ /, "", $col); print $col }' "$3"; }
# bench forward rows: batch context step_ms tokens/s prefill_tokens/s
forward_col() { awk -v b="$1" -v col="$2" '$1 == b && $2 ~ /^[0-9]+$/ { print $col }' "$3"; }
engine_tg() { sed -n 's/.*TPOT: \([0-9.]*\) ms.*/\1/p' "$2" | awk -v n="$1" '{ printf "%.1f\n", n * 1000 / $1 }'; }
engine_pp() { sed -n 's/^TTFT: \([0-9.]*\) ms.*/\1/p' "$2" | awk -v p=$npp '{ printf "%.1f\n", p * 1000 / $1 }'; }
# The median of the figures on stdin, one per line (the lower middle one for even RUNS).
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
# rounds FUNCTION NAME ARGS...: FUNCTION ARGS... WORK/NAME.R.txt for every round R, median.
rounds() { local f=$1 file=$2; shift 2; for r in $(seq 1 "$runs"); do "$f" "$@" "$work/$file.$r.txt"; done | median; }
# engine_rounds FUNCTION N: the same over the engine's N-stream files.
engine_rounds() { local f=$1 n=$2; for r in $(seq 1 "$runs"); do "$f" "$n" "$work/engine.$n.$r.txt"; done | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }

declare -A tg_llama tg_forward tg_engine
for n in "${streams[@]}"; do
  tg_llama[$n]=$(rounds llama_col llamacpp "$n" 9)
  tg_forward[$n]=$(rounds forward_col forward "$n" 4)
  tg_engine[$n]=$(engine_rounds engine_tg "$n")
done
pp_llama=$(rounds llama_col llamacpp 1 7) pp_forward=$(rounds forward_col forward 1 5) pp_engine=$(engine_rounds engine_pp 1)
pp16_llama=$(rounds llama_col llamacpp 16 7) pp16_forward=$(rounds forward_col forward 16 5)

echo
echo "bench-110M (random weights, f32), $npp-token prompts, $ntg generated tokens, $threads threads; tokens/s, median of $runs rounds"
echo "$(sed -n 's/^model: .*; //p' "$work/forward.1.txt" | head -1); started $started; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| | 1 stream | 16 streams | 32 streams | prompt 1 x $npp | prompt 16 x $npp |"
echo "|---|---|---|---|---|---|"
echo "| llama.cpp generation (S_TG) / prompt (S_PP) | ${tg_llama[1]} | ${tg_llama[16]} | ${tg_llama[32]} | $pp_llama | $pp16_llama |"
echo "| inflight bench forward (backend alone) | ${tg_forward[1]} | ${tg_forward[16]} | ${tg_forward[32]} | $pp_forward | $pp16_forward |"
echo "| inflight engine (generate --n-prompts N) | ${tg_engine[1]} | ${tg_engine[16]} | ${tg_engine[32]} | $pp_engine | |"
echo "| bench forward / llama.cpp | $(ratio "${tg_forward[1]}" "${tg_llama[1]}") | $(ratio "${tg_forward[16]}" "${tg_llama[16]}") | $(ratio "${tg_forward[32]}" "${tg_llama[32]}") | $(ratio "$pp_forward" "$pp_llama") | $(ratio "$pp16_forward" "$pp16_llama") |"
echo "| engine / llama.cpp | $(ratio "${tg_engine[1]}" "${tg_llama[1]}") | $(ratio "${tg_engine[16]}" "${tg_llama[16]}") | $(ratio "${tg_engine[32]}" "${tg_llama[32]}") | $(ratio "$pp_engine" "$pp_llama") | |"
echo "| engine / bench forward | $(ratio "${tg_engine[1]}" "${tg_forward[1]}") | $(ratio "${tg_engine[16]}" "${tg_forward[16]}") | $(ratio "${tg_engine[32]}" "${tg_forward[32]}") | $(ratio "$pp_engine" "$pp_forward") | |"

#!/usr/bin/env bash
# Speculative decoding side by side on this machine, in one run: inflight serve and
# llama.cpp's llama-server on the same GGUF file, each with speculation off and with its
# drafters, driven by the same `inflight bench serve --workload copy` (greedy, text
# prompts: a passage, then its start again) at each concurrency.
#
#   scripts/compare-spec-llamacpp.sh PEER_DIR MODEL.gguf [DRAFT.gguf]
#
# inflight: speculative.method off, ngram, suffix and (with DRAFT) draft.
# llama.cpp: --spec-type none, ngram-simple and (with DRAFT) -md DRAFT.gguf (draft-simple).
# Environment: THREADS (2), CONCURRENCY (1,8), SIZE (small: 16 requests; full: 64),
# NUM_PROMPTS (the workload's), SPEC_TOKENS (4, both sides' longest draft), ROUNDS (1).
# Prints one table of output tokens/s (and, for inflight, drafted tokens kept).
set -euo pipefail

peer=${1:?usage: $0 PEER_DIR MODEL.gguf [DRAFT.gguf]}
model=${2:?usage: $0 PEER_DIR MODEL.gguf [DRAFT.gguf]}
draft=${3:-}
threads=${THREADS:-2}
size=${SIZE:-small}
k=${SPEC_TOKENS:-4}
rounds=${ROUNDS:-1}
IFS=, read -r -a concurrencies <<<"${CONCURRENCY:-1,8}"
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${INFLIGHT_BIN:-$root/build/bin/inflight}
for f in "$bin" "$peer/bin/llama-server" "$model"; do
  [ -e "$f" ] || { echo "compare-spec-llamacpp: missing $f" >&2; exit 2; }
done
work=$(mktemp -d /tmp/compare-spec.XXXXXX)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
port=18471
max_c=$(printf '%s\n' "${concurrencies[@]}" | sort -n | tail -1)

wait_up() {  # $1: a URL that answers 200 once the server is ready
  for _ in $(seq 1 600); do
    curl -sf "$1" >/dev/null 2>&1 && return 0
    kill -0 "$server_pid" 2>/dev/null || { echo "compare-spec-llamacpp: the server exited" >&2; cat "$work/server.log" >&2; exit 1; }
    sleep 0.2
  done
  echo "compare-spec-llamacpp: the server did not come up" >&2
  exit 1
}

stop_server() { kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true; server_pid=; }

# bench serve against the running server; prints "tok/s kept drafted" ("-" where unknown).
drive() {  # $1: concurrency, $2: label
  local n=${NUM_PROMPTS:-}
  "$bin" bench serve --url "http://127.0.0.1:$port" --workload copy --size "$size" --max-concurrency "$1" \
    ${n:+--num-prompts "$n"} --result-json "$work/$2.json" >"$work/$2.out" 2>&1 ||
    { cat "$work/$2.out" >&2; exit 1; }
  python3 - "$work/$2.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
print(f"{doc['summary']['output_throughput']:.1f}")
PY
}

inflight_row() {  # $1: method
  local args=(--set "model.path=$model" --set server.port=$port --set engine.threads="$threads"
              --set "engine.max_num_seqs=$max_c" --set "speculative.method=$1"
              --set "speculative.num_speculative_tokens=$k")
  [ "$1" = draft ] && args+=(--set "speculative.draft_model=$draft")
  "$bin" serve "${args[@]}" >"$work/server.log" 2>&1 &
  server_pid=$!
  wait_up "http://127.0.0.1:$port/health"
  local line="inflight $1"
  for c in "${concurrencies[@]}"; do line+=" | $(drive "$c" "inflight-$1-$c")"; done
  local drafted kept
  drafted=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^inflight:spec_decode_num_draft_tokens_total/ {print $2}')
  kept=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^inflight:spec_decode_num_accepted_tokens_total/ {print $2}')
  stop_server
  echo "$line | ${kept:-0} of ${drafted:-0}"
}

llama_row() {  # $1: label, then llama-server's speculative arguments
  local label=$1
  shift
  "$peer/bin/llama-server" -m "$model" -t "$threads" --port "$port" -np "$max_c" -c $((2048 * max_c)) \
    --no-webui "$@" >"$work/server.log" 2>&1 &
  server_pid=$!
  wait_up "http://127.0.0.1:$port/health"
  local line="llama.cpp $label"
  for c in "${concurrencies[@]}"; do line+=" | $(drive "$c" "llama-$label-$c")"; done
  stop_server
  echo "$line | -"
}

echo "compare-spec-llamacpp: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $model${draft:+, draft $draft}; copy ($size), $threads threads, drafts of up to $k" >&2
header="| side | $(printf 'tok/s at %s | ' "${concurrencies[@]}")drafted tokens kept |"
echo "$header"
echo "|$(printf -- '---|%.0s' $(seq 1 $((${#concurrencies[@]} + 2))))"
for _ in $(seq 1 "$rounds"); do
  inflight_row off
  llama_row none
  inflight_row ngram
  llama_row ngram-simple --spec-type ngram-simple --spec-draft-n-max "$k"
  inflight_row suffix
  if [ -n "$draft" ]; then
    inflight_row draft
    llama_row draft -md "$draft" --spec-draft-n-max "$k"
  fi
done

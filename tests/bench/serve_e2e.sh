#!/usr/bin/env bash
# End-to-end: `inflight bench serve` (SSE and WebSocket) against a real `inflight serve`
# on loopback; the output tokens the client counted must equal the server's
# inflight:generation_tokens_total, and the cached prompt tokens of the prefix workload
# its inflight:prefix_cache_hits_total. Prompts longer than the model's context are
# refused (400): the run exits non-zero and says why, in the records, the summary and
# one line on stderr. Usage: serve_e2e.sh INFLIGHT_BINARY PLUGIN_DIR WORK_DIR
# Exit 77 (skipped) when the binary is missing, except under CI=true, where that fails.
set -u
inflight=${1:?inflight binary}
plugins=${2:?plugin dir}
work=${3:?work dir}

missing() {
  if [ "${CI:-}" = "true" ]; then
    echo "FAIL: $1 (CI=true: a missing server is a failure)"
    exit 1
  fi
  echo "SKIP: $1"
  exit 77
}
[ -x "$inflight" ] || missing "no inflight binary at $inflight"
"$inflight" serve --help > /dev/null 2>&1 || missing "$inflight has no serve command"
command -v curl > /dev/null || missing "curl is not installed"

mkdir -p "$work"
rm -f "$work"/*.json "$work"/serve.out "$work"/serve.err
INFLIGHT_PLUGIN_DIR="$plugins" "$inflight" serve --set server.port=0 --set engine.threads=1 \
  > "$work/serve.out" 2> "$work/serve.err" &
server=$!
stop_server() {
  kill "$server" 2> /dev/null
  # The server drains for up to server.shutdown_grace_s; do not wait forever.
  for _ in $(seq 1 75); do kill -0 "$server" 2> /dev/null || break; sleep 0.2; done
  kill -9 "$server" 2> /dev/null
  wait "$server" 2> /dev/null
}
trap stop_server EXIT

# The server prints "listening on http://HOST:PORT" once it accepts connections.
url=""
for _ in $(seq 1 300); do
  url=$(grep -o 'http://[0-9.]*:[0-9]*' "$work/serve.out" "$work/serve.err" 2> /dev/null | head -1 | sed 's/^[^:]*:http/http/')
  [ -n "$url" ] && break
  kill -0 "$server" 2> /dev/null || { echo "FAIL: the server exited"; cat "$work/serve.err"; exit 1; }
  sleep 0.2
done
[ -n "$url" ] || { echo "FAIL: the server printed no address within 60 s"; cat "$work/serve.err"; exit 1; }
echo "server at $url"

fail() {
  echo "FAIL: $1"
  tail -20 "$work/serve.err"
  exit 1
}

# total_output_tokens / completed / failed of a result file's summary.
field() { grep -o "\"$2\": [0-9]*" "$1" | head -1 | grep -o '[0-9]*$'; }

"$inflight" bench serve --url "$url" --num-prompts 6 --input-len 16 --output-len 12 --range-ratio 0.5 \
  --ignore-eos --max-concurrency 3 --result-json "$work/sse.json" || fail "bench serve (SSE) failed"
"$inflight" bench serve --url "$url" --ws --num-prompts 5 --input-len 24 --output-len 8 --ignore-eos \
  --request-rate 20 --seed 3 --result-json "$work/ws.json" || fail "bench serve (WebSocket) failed"
# Two groups of 8 sharing 256 tokens (16 blocks), one request at a time: each group's
# first request computes the prefix, the 7 others find it (2 x 7 x 256 tokens).
"$inflight" bench serve --url "$url" --workload prefix --size small --num-prompts 16 --ignore-eos \
  --max-concurrency 1 --result-json "$work/prefix.json" || fail "bench serve (prefix) failed"
[ "$(field "$work/prefix.json" completed)" = "16" ] || fail "prefix: expected 16 completed requests"
cached=$(field "$work/prefix.json" total_cached_tokens)
server_hits=$(curl -sf "$url/metrics" | grep '^inflight:prefix_cache_hits_total' | awk '{print $2}' | cut -d. -f1)
echo "prefix: client saw $cached cached prompt tokens, server counted $server_hits hits"
[ "$cached" = "3584" ] || fail "prefix: expected 3584 cached tokens"
[ "$cached" = "$server_hits" ] || fail "prefix: cached tokens differ from inflight:prefix_cache_hits_total"

for f in sse ws prefix; do
  [ "$(field "$work/$f.json" failed)" = "0" ] || fail "$f: some requests failed"
done
[ "$(field "$work/sse.json" completed)" = "6" ] || fail "SSE: expected 6 completed requests"
[ "$(field "$work/ws.json" completed)" = "5" ] || fail "WebSocket: expected 5 completed requests"
client=$(( $(field "$work/sse.json" total_output_tokens) + $(field "$work/ws.json" total_output_tokens) \
  + $(field "$work/prefix.json" total_output_tokens) ))
server_tokens=$(curl -sf "$url/metrics" | grep '^inflight:generation_tokens_total' | awk '{print $2}' | cut -d. -f1)
[ -n "$server_tokens" ] || fail "no inflight:generation_tokens_total in /metrics"
echo "client counted $client output tokens, server counted $server_tokens"
[ "$client" -gt 0 ] || fail "no tokens were generated"
[ "$client" = "$server_tokens" ] || fail "token counts differ"
# The WebSocket run asked for exactly 5 x 8 tokens (ignore EOS, no range).
[ "$(field "$work/ws.json" total_output_tokens)" = "40" ] || fail "WebSocket: expected 40 output tokens"
# The same seed gives bench serve and simulate the same arrival times (both draw them from
# the stream the prompts were drawn from): each request is sent within 50 ms of the time
# simulate has it arrive; a separate stream would put them hundreds of ms apart.
"$inflight" bench serve --url "$url" --workload variance --num-prompts 6 --request-rate 4 --burstiness 0.5 \
  --seed 11 --ignore-eos --result-json "$work/arrivals.json" > /dev/null || fail "bench serve (arrivals) failed"
"$inflight" simulate --plugin-dir "$plugins" --shape llama-3.2-1b --workload variance --num-prompts 6 \
  --request-rate 4 --burstiness 0.5 --seed 11 --policy fcfs --json "$work/arrivals-sim.json" > /dev/null 2>&1 ||
  fail "simulate (arrivals) failed"
python3 - "$work/arrivals.json" "$work/arrivals-sim.json" << 'PY' || fail "bench serve and simulate drew different arrival times"
import json, sys
real = sorted(r["start_s"] for r in json.load(open(sys.argv[1]))["runs"][0]["requests"])
sim = sorted(r["start_s"] for r in json.load(open(sys.argv[2]))["runs"][0]["requests"])
print("arrivals: bench serve", [round(t, 3) for t in real], "simulate", [round(t, 3) for t in sim])
sys.exit(0 if len(real) == len(sim) == 6 and max(abs(a - b) for a, b in zip(real, sim)) < 0.05 and sim[-1] > 0.5 else 1)
PY
# The structured workload: constrained (response_format json_schema), then unconstrained
# with the same token counts; every output that was not cut by length parses as JSON (the
# command fails otherwise), and the server observed mask times and compiles.
"$inflight" bench serve --url "$url" --workload structured --num-prompts 6 --cap 32 --max-concurrency 3 \
  --result-json "$work/structured.json" > "$work/structured.out" || { cat "$work/structured.out"; fail "bench serve (structured) failed"; }
cat "$work/structured.out"
[ "$(field "$work/structured.json" unparsable)" = "0" ] || fail "structured: outputs that are not JSON"
stopped=$(field "$work/structured.json" finished_stop)
cut=$(field "$work/structured.json" finished_length)
[ $(( stopped + cut )) = 6 ] || fail "structured: expected 6 outputs finished by stop or length, got $stopped + $cut"
[ $(( $(field "$work/structured.json" valid_json) + $(field "$work/structured.json" unparsable_cut_by_length) )) = 6 ] \
  || fail "structured: every output is JSON or cut by length"
grep -q '^compile (server, cache misses, with the token index): [1-9]' "$work/structured.out" \
  || fail "structured: the server observed no compile"
# Prompts longer than the dummy model's 2048-token context: every request is refused.
refused() {
  local name=$1 expected=$2
  shift 2
  if "$inflight" bench serve --url "$url" "$@" --num-prompts 3 --input-len 3000 --output-len 4 \
      --result-json "$work/$name.json" 2> "$work/$name.err"; then
    fail "$name: bench serve exited 0 although every request was refused"
  fi
  cat "$work/$name.err"
  [ "$(field "$work/$name.json" failed)" = "3" ] || fail "$name: expected 3 failed requests"
  # The 3 records, the failures of the run's summary and of the top-level copy of it.
  [ "$(grep -c "\"error\": \"$expected" "$work/$name.json")" = "5" ] \
    || fail "$name: expected 3 records and the summaries' failures to say '$expected'"
  grep -q "3 of 3 requests failed: 3 x $expected" "$work/$name.err" || fail "$name: no failure line on stderr"
}
refused refused-sse "HTTP 400: the prompt has 3000 tokens, but the model's context is 2048 tokens"
grep -q '"status": 400' "$work/refused-sse.json" || fail "refused-sse: the records carry no status 400"
refused refused-ws "WebSocket error (context_length_exceeded): the prompt has 3000 tokens" --ws
echo "PASS"

#!/usr/bin/env bash
# ctest entry: `curl -N` against `inflight serve`: the SSE bytes are exactly
# `data: <json>\n\n` events ending with `data: [DONE]\n\n`, the streamed text equals
# `inflight generate`'s greedy text, and SIGTERM during a stream ends it with
# finish_reason "abort", then [DONE], and the server exits 0. The stream that SIGTERM
# cuts runs on a backend slowed to 0.2 s a step (debug.step_delay_s): its 480 tokens
# take 96 s at least, so it cannot finish within the 0.2 s grace on any machine.
#   run-curl-sse-test.sh INFLIGHT_BIN PLUGIN_DIR SHARED_DIR WORK_DIR
set -euo pipefail
INFLIGHT_BIN=$1 PLUGIN_DIR=$2 SHARED_DIR=$3 WORK=$4
here=$(cd "$(dirname "$0")" && pwd)
SOURCE_DIR=$(cd "$here/../.." && pwd)
source "$here/serve-lib.sh"

need curl python3
need_file "$SHARED_DIR/models/stories260K/stories260K.bin"
mkdir -p "$WORK"

# check_sse FILE: prints the concatenated text; fails on any framing error.
check_sse() {
  python3 - "$1" <<'PY'
import json, sys
body = open(sys.argv[1], 'rb').read()
assert body.endswith(b'data: [DONE]\n\n'), 'the stream does not end with data: [DONE]'
events = body.split(b'\n\n')
assert events[-1] == b'', 'bytes after the last event'
text, reasons = '', []
for ev in events[:-1]:
    assert ev.startswith(b'data: ') and b'\n' not in ev, 'bad event %r' % ev[:80]
    payload = ev[6:]
    if payload == b'[DONE]':
        continue
    chunk = json.loads(payload)
    assert 'error' not in chunk, chunk
    for choice in chunk['choices']:
        text += choice['text']
        if choice['finish_reason']:
            reasons.append(choice['finish_reason'])
assert events[-2] == b'data: [DONE]', 'DONE is not last'
sys.stdout.write(json.dumps({'text': text, 'reasons': reasons}))
PY
}

greedy_text "Once upon a time" 24 | head -c -1 | sed '1s/^Once upon a time//' >"$WORK/expected.txt"
start_server "$WORK/serve.log"
trap 'kill -9 $SERVER_PID 2>/dev/null || true' EXIT
url="http://127.0.0.1:$PORT"

curl -sN --fail-with-body "$url/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0, "stream": true}' >"$WORK/stream.txt"
result=$(check_sse "$WORK/stream.txt")
python3 -c 'import json,sys; r=json.loads(sys.argv[1]); e=open(sys.argv[2]).read(); assert r["text"]==e, (r["text"], e); assert r["reasons"]==["length"], r' \
  "$result" "$WORK/expected.txt"
echo "curl: SSE framing and greedy text: ok"

# Errors are JSON with a status, not a stream.
code=$(curl -s -o "$WORK/err.json" -w '%{http_code}' "$url/v1/completions" -d '{"prompt": "x", "n": 0, "stream": true}')
[ "$code" = 400 ] || { echo "expected 400, got $code"; exit 1; }
grep -q '"param":"n"' "$WORK/err.json"

stop_server
trap - EXIT

# SIGTERM while a stream runs: it ends with abort and [DONE]; exit code 0.
start_server "$WORK/serve-slow.log" --set server.shutdown_grace_s=0.2 --set debug.step_delay_s=0.2
trap 'kill -9 $SERVER_PID 2>/dev/null || true' EXIT
url="http://127.0.0.1:$PORT"
curl -sN "$url/v1/completions" \
  -d '{"prompt": "Once upon a time", "max_tokens": 480, "ignore_eos": true, "stream": true}' >"$WORK/cut.txt" &
curl_pid=$!
for _ in $(seq 1 600); do
  [ -s "$WORK/cut.txt" ] && break
  sleep 0.05
done
stop_server
trap - EXIT
wait "$curl_pid"
result=$(check_sse "$WORK/cut.txt")
python3 -c 'import json,sys; r=json.loads(sys.argv[1]); assert r["reasons"] == ["abort"], r' "$result"
grep -q "^inflight: shut down" "$WORK/serve-slow.log"
echo "curl: shutdown while streaming: ok"

#!/usr/bin/env bash
# ctest entry: Anthropic's official npm client (@anthropic-ai/sdk) against `inflight serve`
# on /v1/messages: stories260K written with a 2048-token context (the tool prompts need
# it), model.reasoning_parser=think (the thinking block), and an API key (x-api-key).
#   run-anthropic-test.sh INFLIGHT_BIN PLUGIN_DIR SHARED_DIR WORK_DIR
# Missing node, the npm package or the model: exit 77 (skipped), a failure when CI=true.
set -euo pipefail
INFLIGHT_BIN=$1 PLUGIN_DIR=$2 SHARED_DIR=$3 WORK=$4
here=$(cd "$(dirname "$0")" && pwd)
SOURCE_DIR=$(cd "$here/../.." && pwd)
source "$here/serve-lib.sh"

need node
need_file "$here/node_modules/@anthropic-ai/sdk/package.json" "(run scripts/setup-gateway-tests.sh)"
need_file "$SHARED_DIR/models/stories260K/stories260K.bin"
mkdir -p "$WORK"
"$INFLIGHT_BIN" make-model --from "$SHARED_DIR/models/stories260K/stories260K.bin" --max-seq-len 2048 \
  --out "$WORK/stories260K-2k.bin" 2>/dev/null
key=sk-anthropic-test
start_server "$WORK/serve.log" --set "model.path=$WORK/stories260K-2k.bin" --set model.reasoning_parser=think \
  --api-key "$key"
trap 'kill -9 $SERVER_PID 2>/dev/null || true' EXIT
node "$here/anthropic-client.mjs" "http://127.0.0.1:$PORT" "$key"
stop_server
trap - EXIT
grep -q "^inflight: shut down" "$WORK/serve.log"

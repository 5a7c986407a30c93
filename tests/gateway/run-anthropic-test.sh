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
model=$(stories_2k "$WORK")
key=sk-anthropic-test
client() { node "$here/anthropic-client.mjs" "http://127.0.0.1:$PORT" "$key"; }
serve_and_run "$WORK/serve.log" --set "model.path=$model" --set model.reasoning_parser=think --api-key "$key" -- client

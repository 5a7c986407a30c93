#!/usr/bin/env bash
# ctest entry: /v1/responses driven by real clients against `inflight serve` (stories260K
# written with a 2048-token context, so that tool prompts fit).
#   run-responses-test.sh INFLIGHT_BIN PLUGIN_DIR SHARED_DIR WORK_DIR SCRIPT
# SCRIPT: responses-client.mjs (the openai npm client; the server splits <think> reasoning,
# model.reasoning_parser=think) or agents-client.mjs (the OpenAI Agents SDK). Missing node,
# the npm packages or the model: exit 77 (skipped), a failure when CI=true.
set -euo pipefail
INFLIGHT_BIN=$1 PLUGIN_DIR=$2 SHARED_DIR=$3 WORK=$4 SCRIPT=$5
here=$(cd "$(dirname "$0")" && pwd)
SOURCE_DIR=$(cd "$here/../.." && pwd)
source "$here/serve-lib.sh"

need node
need_file "$here/node_modules/openai/package.json" "(run scripts/setup-gateway-tests.sh)"
need_file "$here/node_modules/ajv/package.json" "(run scripts/setup-gateway-tests.sh)"
need_file "$here/node_modules/@openai/agents/package.json" "(run scripts/setup-gateway-tests.sh)"
need_file "$SHARED_DIR/models/stories260K/stories260K.bin"
mkdir -p "$WORK"
extra=(--set "model.path=$(stories_2k "$WORK")")
[ "$SCRIPT" = responses-client.mjs ] && extra+=(--set model.reasoning_parser=think)
client() { node "$here/$SCRIPT" "http://127.0.0.1:$PORT/v1"; }
serve_and_run "$WORK/serve.log" "${extra[@]}" -- client

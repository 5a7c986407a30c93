#!/usr/bin/env bash
# ctest entry: the official openai npm client against `inflight serve` (stories260K).
#   run-openai-test.sh INFLIGHT_BIN PLUGIN_DIR SHARED_DIR WORK_DIR [SCRIPT]
# SCRIPT: openai-client.mjs (the default) or openai-structured.mjs (structured outputs
# and tools, validated with ajv). Missing node, the npm packages or the model: exit 77
# (skipped), a failure when CI=true.
set -euo pipefail
INFLIGHT_BIN=$1 PLUGIN_DIR=$2 SHARED_DIR=$3 WORK=$4 SCRIPT=${5:-openai-client.mjs}
here=$(cd "$(dirname "$0")" && pwd)
SOURCE_DIR=$(cd "$here/../.." && pwd)
source "$here/serve-lib.sh"

need node
need_file "$here/node_modules/openai/package.json" "(run scripts/setup-gateway-tests.sh)"
need_file "$here/node_modules/ajv/package.json" "(run scripts/setup-gateway-tests.sh)"
need_file "$SHARED_DIR/models/stories260K/stories260K.bin"
mkdir -p "$WORK"
greedy_text "Once upon a time" 20 | head -c -1 | sed '1s/^Once upon a time//' >"$WORK/expected.txt"
# The tool prompts are over stories260K's 512-token context: the structured script runs
# on the same weights written with a 2048-token one.
extra=()
[ "$SCRIPT" = openai-structured.mjs ] && extra=(--set "model.path=$(stories_2k "$WORK")")
client() { node "$here/$SCRIPT" "http://127.0.0.1:$PORT/v1" "$WORK/expected.txt"; }
serve_and_run "$WORK/serve.log" "${extra[@]}" -- client

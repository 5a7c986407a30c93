#!/usr/bin/env bash
# ctest entry: `inflight serve`'s responses (stories260K) validated with ajv against
# OpenAI's response schemas (openai-schemas.mjs).
#   run-openai-schema-test.sh INFLIGHT_BIN PLUGIN_DIR SHARED_DIR WORK_DIR
# Missing node, ajv or the model: exit 77 (skipped), a failure when CI=true.
set -euo pipefail
INFLIGHT_BIN=$1 PLUGIN_DIR=$2 SHARED_DIR=$3 WORK=$4
here=$(cd "$(dirname "$0")" && pwd)
SOURCE_DIR=$(cd "$here/../.." && pwd)
source "$here/serve-lib.sh"

need node
need_file "$here/node_modules/ajv/package.json" "(run scripts/setup-gateway-tests.sh)"
need_file "$SHARED_DIR/models/stories260K/stories260K.bin"
mkdir -p "$WORK"
# A small waiting queue: a request with more choices than it holds is a 400.
start_server "$WORK/serve.log" --set server.max_waiting_requests=16
trap 'kill -9 $SERVER_PID 2>/dev/null || true' EXIT
node "$here/openai-schema.mjs" "http://127.0.0.1:$PORT/v1"
stop_server
trap - EXIT
grep -q "^inflight: shut down" "$WORK/serve.log"

#!/usr/bin/env bash
# Soak test: `inflight serve` with stories260K on a loopback port, driven by soak.mjs for
# SOAK_SECONDS (default 60; `make soak` runs longer), then stopped with SIGTERM (exit 0).
# The queue limits are small so that bursts go over them.
#   run-soak.sh INFLIGHT_BIN PLUGIN_DIR SHARED_DIR WORK_DIR
set -euo pipefail
INFLIGHT_BIN=$1
PLUGIN_DIR=$2
SHARED_DIR=$3
WORK_DIR=$4
SOURCE_DIR=$(cd "$(dirname "$0")/../.." && pwd)
. "$SOURCE_DIR/tests/gateway/serve-lib.sh"

need node
need_file "$SHARED_DIR/models/stories260K/stories260K.bin" "(the stories260K model)"
mkdir -p "$WORK_DIR"

start_server "$WORK_DIR/serve.log" \
  --set engine.max_num_seqs=16 --set engine.kv_blocks=96 --set engine.max_num_batched_tokens=128 \
  --set server.max_waiting_requests=16
trap 'kill -TERM $SERVER_PID 2>/dev/null || true' EXIT

rc=0
node "$SOURCE_DIR/tests/soak/soak.mjs" --port "$PORT" --pid "$SERVER_PID" \
  --seconds "${SOAK_SECONDS:-60}" --min-requests "${SOAK_MIN_REQUESTS:-2000}" --seed "${SOAK_SEED:-1}" || rc=$?
if ! kill -0 "$SERVER_PID" 2>/dev/null; then
  echo "soak: inflight serve died during the run:"
  tail -50 "$WORK_DIR/serve.log"
  exit 1
fi
trap - EXIT
stop_server
[ $rc = 0 ] || { echo "soak: server log tail:"; tail -20 "$WORK_DIR/serve.log"; }
exit $rc

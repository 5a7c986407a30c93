#!/usr/bin/env bash
# ctest entry: a LoRA adapter over stories260K (`serve --lora sql=DIR`), driven by
# lora-client.py over HTTP.
#   run-lora-test.sh INFLIGHT_BIN PLUGIN_DIR SHARED_DIR WORK_DIR
set -euo pipefail
INFLIGHT_BIN=$1 PLUGIN_DIR=$2 SHARED_DIR=$3 WORK=$4
here=$(cd "$(dirname "$0")" && pwd)
SOURCE_DIR=$(cd "$here/../.." && pwd)
source "$here/serve-lib.sh"

need python3
need_file "$SHARED_DIR/models/stories260K/stories260K.bin"
rm -rf "$WORK"
mkdir -p "$WORK"
python3 "$SOURCE_DIR/scripts/make-lora.py" "$SHARED_DIR/models/stories260K/stories260K.bin" "$WORK/sql"
start_server "$WORK/serve.log" --lora "sql=$WORK/sql"
rc=0
python3 "$here/lora-client.py" "$PORT" || rc=$?
stop_server
[ "$rc" = 0 ] || { cat "$WORK/serve.log"; exit "$rc"; }

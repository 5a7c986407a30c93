#!/usr/bin/env bash
# ctest entry: LoRA adapters over stories260K (`serve --lora sql=DIR`, more loaded at run
# time), driven by lora-client.py over HTTP; then a server that keeps one adapter in
# memory (lora.max_cpu_loras = 1) and takes one per step (lora.max_loras_per_step = 1).
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
python3 "$SOURCE_DIR/scripts/make-lora.py" "$SHARED_DIR/models/stories260K/stories260K.bin" "$WORK/poem" --seed 11
# Drafts whatever the rows cost (learned costs depend on the machine's speed).
start_server "$WORK/serve.log" --lora "sql=$WORK/sql" --set speculative.learn_row_cost=false
rc=0
python3 "$here/lora-client.py" "$PORT" "$WORK" || rc=$?
stop_server
[ "$rc" = 0 ] || { cat "$WORK/serve.log"; exit "$rc"; }
start_server "$WORK/serve-lru.log" --lora "sql=$WORK/sql" --lora "poem=$WORK/poem" \
  --set lora.max_cpu_loras=1 --set lora.max_loras_per_step=1
python3 "$here/lora-client.py" "$PORT" "$WORK" --lru || rc=$?
stop_server
[ "$rc" = 0 ] || { cat "$WORK/serve-lru.log"; exit "$rc"; }

#!/usr/bin/env bash
# ctest entry: LoRA adapters over stories260K (`serve --lora sql=DIR`, more loaded at run
# time), driven by lora-client.py over HTTP; then a server that keeps one adapter in
# memory (lora.max_cpu_loras = 1) and takes one per step (lora.max_loras_per_step = 1); then
# a server of several models whose first has an adapter of its own ([models.lora]).
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

# Several models in one server ([[models]]), one with adapters of its own ([models.lora]).
cat >"$WORK/models.toml" <<TOML
[engine]
backend = "cpu"
kv_blocks = 1024
max_num_batched_tokens = 256
[scheduler]
plugin_dir = "$PLUGIN_DIR"
[server]
max_loaded_models = 1
[[models]]
name = "stories"
path = "$SHARED_DIR/models/stories260K/stories260K.bin"
tokenizer = "$SHARED_DIR/models/stories260K/tok512.bin"
[models.lora]
adapters = { sql = "$WORK/sql" }
[[models]]
name = "noise"
format = "dummy"
TOML
: >"$WORK/serve-models.log"
"$INFLIGHT_BIN" serve --config "$WORK/models.toml" --set server.port=0 >"$WORK/serve-models.log" 2>&1 &
SERVER_PID=$!
wait_for_port "$WORK/serve-models.log"
python3 "$here/lora-client.py" "$PORT" "$WORK" --models || rc=$?
stop_server
[ "$rc" = 0 ] || { cat "$WORK/serve-models.log"; exit "$rc"; }

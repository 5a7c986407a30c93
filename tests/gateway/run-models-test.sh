#!/usr/bin/env bash
# ctest entry: several models in one `inflight serve` ([[models]] in TOML and --model
# NAME=SPEC), driven by models-client.mjs over HTTP, SSE and the WebSocket; then a server
# that loads them on demand (max_loaded_models = 1), driven by models-demand-client.mjs.
#   run-models-test.sh INFLIGHT_BIN PLUGIN_DIR SHARED_DIR WORK_DIR
# Missing node or the model: exit 77 (skipped), a failure when CI=true.
set -euo pipefail
INFLIGHT_BIN=$1 PLUGIN_DIR=$2 SHARED_DIR=$3 WORK=$4
here=$(cd "$(dirname "$0")" && pwd)
SOURCE_DIR=$(cd "$here/../.." && pwd)
source "$here/serve-lib.sh"

need node
stories=$SHARED_DIR/models/stories260K
need_file "$stories/stories260K.bin"
mkdir -p "$WORK"
"$INFLIGHT_BIN" make-model --from "$stories/stories260K.bin" --tokenizer "$stories/tok512.bin" --format gguf \
  --out "$WORK/stories260K.gguf" >/dev/null 2>&1
cat >"$WORK/models.toml" <<TOML
[server]
port = 0

[scheduler]
plugin_dir = "$PLUGIN_DIR"

[[models]]
name = "stories"
path = "$stories/stories260K.bin"
tokenizer = "$stories/tok512.bin"
aliases = ["tiny"]

[[models]]
name = "noise"
format = "dummy"
[models.engine]
max_num_seqs = 8
TOML
log=$WORK/serve.log
"$INFLIGHT_BIN" serve --config "$WORK/models.toml" --model "copy=$WORK/stories260K.gguf" >"$log" 2>&1 &
SERVER_PID=$!
wait_for_port "$log"
rc=0
node "$here/models-client.mjs" "$PORT" || rc=$?
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" || { echo "inflight serve did not exit cleanly"; cat "$log"; exit 1; }
grep -q "inflight: shut down" "$log" || { cat "$log"; exit 1; }
[ "$rc" = 0 ] || { cat "$log"; exit "$rc"; }

# Loaded on demand: one model at a time, behind an API key; `broken` loses its file once
# the server runs.
cp "$stories/stories260K.bin" "$WORK/broken-stories.bin"
cat >"$WORK/demand.toml" <<TOML
[server]
port = 0
max_loaded_models = 1
api_keys = ["demand-key"]

[scheduler]
plugin_dir = "$PLUGIN_DIR"

[[models]]
name = "stories"
path = "$stories/stories260K.bin"
tokenizer = "$stories/tok512.bin"

[[models]]
name = "noise"
format = "dummy"

[[models]]
name = "broken"
path = "$WORK/broken-stories.bin"
tokenizer = "$stories/tok512.bin"
TOML
log=$WORK/demand.log
"$INFLIGHT_BIN" serve --config "$WORK/demand.toml" >"$log" 2>&1 &
SERVER_PID=$!
wait_for_port "$log"
rm "$WORK/broken-stories.bin"
rc=0
node "$here/models-demand-client.mjs" "$PORT" demand-key || rc=$?
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" || { echo "inflight serve did not exit cleanly"; cat "$log"; exit 1; }
[ "$rc" = 0 ] || { cat "$log"; exit "$rc"; }
grep -q "inflight: model noise loaded" "$log" || { echo "no load line in the log"; cat "$log"; exit 1; }

# A model.path beside [[models]] is an error that says what to do.
if out=$("$INFLIGHT_BIN" serve --config "$WORK/models.toml" --set model.path=/x.gguf 2>&1); then
  echo "serve took model.path beside [[models]]"; exit 1
fi
echo "$out" | grep -q "model.path and \[\[models\]\] both name models" || { echo "unclear: $out"; exit 1; }
if out=$("$INFLIGHT_BIN" serve --config "$WORK/models.toml" --model "noise=/x.gguf" 2>&1); then
  echo "serve took two models named noise"; exit 1
fi
echo "$out" | grep -q "the name 'noise' chooses two models" || { echo "unclear: $out"; exit 1; }
echo "ok: bad model tables are refused"

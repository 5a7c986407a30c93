# Shared by the gateway test scripts: start `inflight serve` on a free port with
# stories260K, find the port it printed, stop it with SIGTERM.
#   INFLIGHT_BIN, PLUGIN_DIR, SHARED_DIR and SOURCE_DIR must be set by the caller.

# need TOOL...: a missing tool skips the test (exit 77), or fails it when CI=true.
need() {
  for tool in "$@"; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "gateway test: $tool is not installed"
      [ "${CI:-}" = "true" ] && exit 1
      exit 77
    fi
  done
}

need_file() {
  if [ ! -e "$1" ]; then
    echo "gateway test: missing $1 ${2:-}"
    [ "${CI:-}" = "true" ] && exit 1
    exit 77
  fi
}

# The stories260K files and the built plugins (paths without spaces).
model_flags() {
  echo "--set model.path=$SHARED_DIR/models/stories260K/stories260K.bin" \
    "--set model.tokenizer=$SHARED_DIR/models/stories260K/tok512.bin" \
    "--set scheduler.plugin_dir=$PLUGIN_DIR"
}

# wait_for_port LOG: the port the server SERVER_PID printed to LOG, in PORT; exits the
# test when it exits first or prints none.
wait_for_port() {
  local log=$1
  PORT=""
  for _ in $(seq 1 300); do
    PORT=$(sed -n 's/^inflight: listening on http:\/\/[0-9.]*:\([0-9]*\).*/\1/p' "$log")
    [ -n "$PORT" ] && return 0
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      echo "gateway test: inflight serve exited early:"
      cat "$log"
      exit 1
    fi
    sleep 0.1
  done
  echo "gateway test: inflight serve printed no port:"
  cat "$log"
  exit 1
}

# start_server LOG [--set k=v ...]: sets SERVER_PID and PORT.
start_server() {
  local log=$1
  shift
  # Emptied here, not by the background job's redirection: that one may run after the
  # wait_for_port has read a port from the last run's log.
  : >"$log"
  "$INFLIGHT_BIN" serve --config "$SOURCE_DIR/config/cpu-small.toml" --set server.port=0 $(model_flags) "$@" \
    >"$log" 2>&1 &
  SERVER_PID=$!
  wait_for_port "$log"
}

# stop_server: SIGTERM, then the exit code must be 0.
stop_server() {
  kill -TERM "$SERVER_PID"
  local rc=0
  wait "$SERVER_PID" || rc=$?
  if [ "$rc" != 0 ]; then
    echo "gateway test: inflight serve exited with $rc after SIGTERM"
    exit 1
  fi
}

# greedy_text PROMPT N: the text `inflight generate` produces (the prompt removed).
greedy_text() {
  "$INFLIGHT_BIN" generate --config "$SOURCE_DIR/config/cpu-small.toml" $(model_flags) \
    --prompt "$1" --max-tokens "$2" --temperature 0 2>/dev/null
}

# stories_2k DIR: stories260K's weights written with a 2048-token context (tool prompts
# are over its own 512) into DIR; prints the file's path.
stories_2k() {
  "$INFLIGHT_BIN" make-model --from "$SHARED_DIR/models/stories260K/stories260K.bin" --max-seq-len 2048 \
    --out "$1/stories260K-2k.bin" 2>/dev/null
  echo "$1/stories260K-2k.bin"
}

# serve_and_run LOG [--set k=v ...] -- COMMAND...: a server (start_server LOG ...) for
# COMMAND, which gets its port as $PORT; the server is then stopped cleanly and must have
# logged its shutdown (killed if COMMAND fails).
serve_and_run() {
  local log=$1
  shift
  local args=()
  while [ "$1" != "--" ]; do
    args+=("$1")
    shift
  done
  shift
  start_server "$log" "${args[@]}"
  trap 'kill -9 $SERVER_PID 2>/dev/null || true' EXIT
  "$@"
  stop_server
  trap - EXIT
  grep -q "^inflight: shut down" "$log"
}

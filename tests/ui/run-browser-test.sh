#!/usr/bin/env bash
# ctest entry: the web UI in Debian's chromium (tests/ui/browser-test.mjs) against
# `inflight serve` with the default deployment (random weights; no ../shared needed),
# a context long enough for the "stop mid-stream" request and a KV cache small enough to
# fill visibly under the load; then the page against a server with an API key
# (tests/ui/browser-keys-test.mjs). Screenshots: WORK_DIR/*.png.
# Skipped (77) without chromium, node or puppeteer-core (scripts/setup-ui-tests.sh),
# failed when CI=true.
#   run-browser-test.sh INFLIGHT_BIN WORK_DIR
set -euo pipefail
INFLIGHT_BIN=$1 WORK=$2
here=$(cd "$(dirname "$0")" && pwd)
SOURCE_DIR=$(cd "$here/../.." && pwd)

missing() {
  echo "browser test: $1"
  [ "${CI:-}" = "true" ] && exit 1
  exit 77
}
[ -x /usr/bin/chromium ] || missing "/usr/bin/chromium is not installed (scripts/setup-ui-tests.sh)"
command -v node >/dev/null 2>&1 || missing "node is not installed"
[ -f "$here/node_modules/puppeteer-core/package.json" ] || missing "puppeteer-core is not installed (scripts/setup-ui-tests.sh)"

rm -rf "$WORK"
mkdir -p "$WORK"
pid=""
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null || true' EXIT

# wait_for_port LOG: the port the server `pid` printed to LOG, in `port`.
wait_for_port() {
  port=""
  for _ in $(seq 1 600); do
    port=$(sed -n 's/^inflight: listening on http:\/\/[0-9.]*:\([0-9]*\).*/\1/p' "$1")
    [ -n "$port" ] && return 0
    kill -0 "$pid" 2>/dev/null || { echo "browser test: inflight serve exited early:"; cat "$1"; exit 1; }
    sleep 0.1
  done
  echo "browser test: no port printed"; cat "$1"; exit 1
}
"$INFLIGHT_BIN" serve --config "$SOURCE_DIR/config/default.toml" --set server.port=0 \
  --set model.dummy.max_position=32768 --set engine.max_num_batched_tokens=256 --set engine.kv_blocks=2048 \
  --set server.shutdown_grace_s=0.5 --set speculative.method=ngram --set speculative.learn_row_cost=false \
  >"$WORK/serve.log" 2>&1 &
pid=$!
wait_for_port "$WORK/serve.log"

node "$here/browser-test.mjs" "http://127.0.0.1:$port/" "$WORK"
kill -TERM "$pid"
wait "$pid"

# The same page behind an API key ('/' and '=' need the key's base64url form).
key='sk-ui/test=1'
"$INFLIGHT_BIN" serve --config "$SOURCE_DIR/config/default.toml" --set server.port=0 --api-key "$key" \
  --set server.shutdown_grace_s=0.5 >"$WORK/serve-keys.log" 2>&1 &
pid=$!
wait_for_port "$WORK/serve-keys.log"
node "$here/browser-keys-test.mjs" "http://127.0.0.1:$port/" "$key" "$WORK"
kill -TERM "$pid"
wait "$pid"

# Two models, the second loaded on demand: the header's choice of model.
cat >"$WORK/models.toml" <<TOML
[server]
port = 0
max_loaded_models = 1
shutdown_grace_s = 0.5

[[models]]
name = "first"
format = "dummy"
dummy.seed = 1

[[models]]
name = "second"
format = "dummy"
dummy.seed = 2
TOML
"$INFLIGHT_BIN" serve --config "$WORK/models.toml" >"$WORK/serve-models.log" 2>&1 &
pid=$!
wait_for_port "$WORK/serve-models.log"
node "$here/browser-models-test.mjs" "http://127.0.0.1:$port/" "$WORK"
kill -TERM "$pid"
wait "$pid"
trap - EXIT
echo "browser test: screenshots in $WORK"

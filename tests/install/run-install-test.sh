#!/usr/bin/env bash
# ctest entry: `cmake --install` into a temporary prefix, move the installed tree to
# another folder, and serve a request from it: the binary must find its policy plugins
# next to itself (not in the build folder), and scheduler.plugin_dir /
# INFLIGHT_PLUGIN_DIR must still override that.
#   run-install-test.sh BUILD_DIR WORK_DIR
set -euo pipefail
BUILD=$1 WORK=$2
here=$(cd "$(dirname "$0")" && pwd)

for tool in curl python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "install test: $tool is not installed"
    [ "${CI:-}" = "true" ] && exit 1
    exit 77
  fi
done

rm -rf "$WORK"
mkdir -p "$WORK"
cmake --install "$BUILD" --prefix "$WORK/first" >"$WORK/install.log"
mv "$WORK/first" "$WORK/moved"
tree=$WORK/moved
for f in bin/inflight include/inflight/inflight_policy.h share/inflight/config/default.toml \
         lib/inflight/plugins/inflight_policy_splitfuse.so lib/inflight/plugins/inflight_policy_static.so; do
  [ -e "$tree/$f" ] || { echo "install test: $f is not installed"; ls -R "$tree"; exit 1; }
done
echo "install test: installed and moved to $tree"

# Serve from the moved tree with no override in the environment; run from another
# folder so that nothing relative to the working directory helps.
unset INFLIGHT_PLUGIN_DIR
cd "$WORK"
"$tree/bin/inflight" serve --config "$tree/share/inflight/config/default.toml" --set server.port=0 \
  --set server.shutdown_grace_s=0.5 >"$WORK/serve.log" 2>&1 &
pid=$!
trap 'kill -9 $pid 2>/dev/null || true' EXIT
port=""
for _ in $(seq 1 600); do
  port=$(sed -n 's/^inflight: listening on http:\/\/[0-9.]*:\([0-9]*\).*/\1/p' "$WORK/serve.log")
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || { echo "install test: inflight serve exited early:"; cat "$WORK/serve.log"; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "install test: no port printed"; cat "$WORK/serve.log"; exit 1; }
grep -qx "inflight: policy plugins from $tree/lib/inflight/plugins" "$WORK/serve.log" || {
  echo "install test: plugins not taken from the moved tree:"; cat "$WORK/serve.log"; exit 1; }

curl -s --fail-with-body "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt": "hello", "max_tokens": 8, "ignore_eos": true}' >"$WORK/reply.json"
python3 - "$WORK/reply.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["usage"]["completion_tokens"] == 8, r
assert r["choices"][0]["finish_reason"] == "length", r
PY
kill -TERM "$pid"
wait "$pid"
trap - EXIT
echo "install test: the moved tree served a completion"

# The overrides still win over the binary's own location.
gen() { "$tree/bin/inflight" generate --config "$tree/share/inflight/config/default.toml" --prompt hi --max-tokens 1 "$@"; }
if gen --set scheduler.plugin_dir=/nonexistent-plugins >"$WORK/override.log" 2>&1; then
  echo "install test: scheduler.plugin_dir=/nonexistent-plugins was ignored"; exit 1
fi
grep -q "/nonexistent-plugins/inflight_policy_splitfuse.so" "$WORK/override.log"
if INFLIGHT_PLUGIN_DIR=/nonexistent-env gen >"$WORK/env.log" 2>&1; then
  echo "install test: INFLIGHT_PLUGIN_DIR=/nonexistent-env was ignored"; exit 1
fi
grep -q "/nonexistent-env/inflight_policy_splitfuse.so" "$WORK/env.log"
echo "install test: scheduler.plugin_dir and INFLIGHT_PLUGIN_DIR override: ok"

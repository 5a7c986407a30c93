#!/usr/bin/env bash
# ctest entry: several models behind a router. Engine A serves `stories` and `noise`
# ([[models]]: one port, a host per model), engine B serves `stories` alone ([model]);
# the router ([[models]] stories and noise, round_robin) sends each request to the
# engines that serve its model: `noise` only to A, `stories` to both.
#   run-models-routing-test.sh INFLIGHT_BIN PLUGIN_DIR SHARED_DIR WORK_DIR
set -euo pipefail
INFLIGHT_BIN=$1 PLUGIN_DIR=$2 SHARED_DIR=$3 WORK=$4
here=$(cd "$(dirname "$0")" && pwd)
SOURCE_DIR=$(cd "$here/../.." && pwd)
source "$SOURCE_DIR/tests/gateway/serve-lib.sh"

CLUSTER_TEST="models routing test"
source "$here/cluster-lib.sh"

need curl python3
stories=$SHARED_DIR/models/stories260K
need_file "$stories/stories260K.bin"
rm -rf "$WORK"
mkdir -p "$WORK"
FAIL_LOGS=$WORK
cat >"$WORK/models.toml" <<TOML
[scheduler]
plugin_dir = "$PLUGIN_DIR"

[[models]]
name = "stories"
path = "$stories/stories260K.bin"
tokenizer = "$stories/tok512.bin"

[[models]]
name = "noise"
format = "dummy"
aliases = ["random"]
dummy.seed = 5
TOML

start_engine "$WORK/engine-a.log" 0 --config "$WORK/models.toml"; port_a=$ENGINE_PORT pid_a=$ENGINE_PID
start_engine "$WORK/engine-b.log" 0 --config "$SOURCE_DIR/config/cpu-small.toml" $(model_flags) \
  --set model.name=stories; port_b=$ENGINE_PORT pid_b=$ENGINE_PID
start_router "$WORK/router.log" --config "$WORK/models.toml" --set server.port=0 \
  --engines "127.0.0.1:$port_a,127.0.0.1:$port_b" --route-policy round_robin
base=$ROUTER_URL

complete() {  # complete MODEL: the text of one greedy completion
  curl -sS "$base/v1/completions" -H 'content-type: application/json' \
    -d "{\"model\": \"$1\", \"prompt\": \"Once upon a time\", \"max_tokens\": 12, \"temperature\": 0}" |
    python3 -c 'import json, sys; d = json.load(sys.stdin); assert "error" not in d, d; print(d["choices"][0]["text"], end="")'
}
# generated MODEL PORT: the tokens the engine at PORT generated for MODEL (router's /metrics).
generated() {
  curl -sS "$base/metrics" | python3 -c '
import re, sys
model, engine = sys.argv[1], "127.0.0.1:" + sys.argv[2]
total = 0
for line in sys.stdin:
    m = re.match(r"inflight:generation_tokens_total\{(.*)\} (\d+)", line)
    if m and f"model_name=\"{model}\"" in m.group(1) and f"engine=\"{engine}\"" in m.group(1):
        total += int(m.group(2))
print(total)' "$1" "$2"
}

# Both engines need a moment to be reached by both routers; wait until stories has two.
for _ in $(seq 1 100); do
  up=$(curl -sS "$base/metrics" | grep -c '^inflight:router_engine_up{model_name="stories",engine="[^"]*"} 1' || true)
  [ "$up" = 2 ] && break
  sleep 0.1
done
[ "$up" = 2 ] || fail "the router for stories reached $up engines, not 2"

noise_first=$(complete noise)
stories_first=$(complete stories)
[ "$noise_first" != "$stories_first" ] || fail "noise and stories wrote the same: $noise_first"
for _ in 1 2 3 4 5; do
  [ "$(complete noise)" = "$noise_first" ] || fail "noise wrote another text"
  [ "$(complete random)" = "$noise_first" ] || fail "the alias random did not choose noise"
  [ "$(complete stories)" = "$stories_first" ] || fail "stories wrote another text"
done
noise_a=$(generated noise "$port_a") noise_b=$(generated noise "$port_b")
stories_a=$(generated stories "$port_a") stories_b=$(generated stories "$port_b")
echo "generated tokens: noise A=$noise_a B=$noise_b, stories A=$stories_a B=$stories_b"
[ "$noise_a" -gt 0 ] || fail "engine A generated no tokens for noise"
[ "$noise_b" = 0 ] || fail "engine B, which does not serve noise, generated $noise_b tokens for it"
[ "$stories_a" -gt 0 ] && [ "$stories_b" -gt 0 ] || fail "round_robin did not send stories to both engines"
grep -q "inflight: model noise" "$WORK/engine-a.log" || fail "engine A did not load noise"

stop_process "$ROUTER_PID" router
stop_process "$pid_a" "engine A"
stop_process "$pid_b" "engine B"
echo "ok: each model's requests went only to the engines serving it (noise: A only; stories: A and B)"

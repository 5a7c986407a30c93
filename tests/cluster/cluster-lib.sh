# Shared by the cluster tests (tests/cluster/run-*.sh): engine and router processes on
# this machine (loopback), killed at exit, and one way to fail. Source it after
# tests/gateway/serve-lib.sh, with INFLIGHT_BIN set and CLUSTER_TEST naming the test:
#   start_engine LOG [PORT|-] [ARGS...]   an engine (`serve --role engine`); sets
#                                         ENGINE_PID and ENGINE_PORT ("-": the port comes
#                                         from [cluster] bind in ARGS' config)
#   start_router LOG [ARGS...]            a router; sets ROUTER_PID and ROUTER_URL
#   stop_process PID WHAT                 SIGTERM, and fail unless it exits 0
#   fail MESSAGE                          prints "CLUSTER_TEST: MESSAGE" (and every log in
#                                         FAIL_LOGS, a directory) and exits 1
# Every process started here is in `pids` and killed (-9) if the test exits early.

pids=()
cleanup_cluster() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap cleanup_cluster EXIT

fail() {
  echo "$CLUSTER_TEST: $*" >&2
  if [ -n "${FAIL_LOGS:-}" ]; then for f in "$FAIL_LOGS"/*.log; do echo "--- $f" >&2; cat "$f" >&2; done; fi
  exit 1
}

# wait_for_line LOG PID SED_SCRIPT WHAT: the first match of SED_SCRIPT (sed -n) in LOG,
# within 60 s, while PID lives.
wait_for_line() {
  local log=$1 pid=$2 script=$3 what=$4 value
  for _ in $(seq 1 600); do
    value=$(sed -n "$script" "$log" | head -n 1)
    if [ -n "$value" ]; then echo "$value"; return 0; fi
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "$what exited early"; }
    sleep 0.1
  done
  cat "$log" >&2
  fail "$what printed no address"
}

start_engine() {
  local log=$1 port=${2:--}
  shift $(( $# < 2 ? $# : 2 ))
  local port_flag=()
  [ "$port" != - ] && port_flag=(--port "$port")
  : >"$log"
  "$INFLIGHT_BIN" serve --role engine "${port_flag[@]}" "$@" >"$log" 2>&1 &
  ENGINE_PID=$!
  pids+=("$ENGINE_PID")
  ENGINE_PORT=$(wait_for_line "$log" "$ENGINE_PID" \
    's/^inflight: serving the engine on tcp:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "the engine ($log)")
}

start_router() {
  local log=$1
  shift
  : >"$log"
  "$INFLIGHT_BIN" serve --role router "$@" >"$log" 2>&1 &
  ROUTER_PID=$!
  pids+=("$ROUTER_PID")
  ROUTER_URL=$(wait_for_line "$log" "$ROUTER_PID" \
    's/^inflight: listening on \(https\{0,1\}:\/\/127.0.0.1:[0-9]*\) .*/\1/p' "the router ($log)")
}

stop_process() {
  local pid=$1 what=$2 rc=0
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  [ "$rc" = 0 ] || fail "$what exited with $rc after SIGTERM"
}

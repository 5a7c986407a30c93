#!/usr/bin/env bash
# Runs the libFuzzer harnesses built in BUILD_DIR (configured with -DINFLIGHT_FUZZ=ON).
#
#   run-fuzz.sh BUILD_DIR check [HARNESS...]   make test: replay every regression input,
#       then a fixed number of runs per harness (FUZZ_RUNS_SCALE x the table below) from
#       the seed corpus with a fixed seed; new inputs go to a scratch folder.
#   run-fuzz.sh BUILD_DIR long [HARNESS...]    make fuzz: FUZZ_SECONDS (default 300) per
#       harness, FUZZ_JOBS (default 2) harnesses at a time; the corpus grows in
#       BUILD_DIR/fuzz-corpus, findings land in BUILD_DIR/fuzz-findings.
#
# Either mode prints the executions per harness and fails on any crash, leak, UB
# report, FUZZ_CHECK failure or timeout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: run-fuzz.sh BUILD_DIR check|long [HARNESS...]}
mode=${2:?usage: run-fuzz.sh BUILD_DIR check|long [HARNESS...]}
shift 2

# Runs per harness in `check` mode: about the same time for each under ASan + UBSan.
declare -A check_runs=(
  [openai_request]=20000 [ws_message]=30000 [hf_tokenizer]=10000 [safetensors]=40000
  [llama2c_tokenizer]=25000 [llama2c_checkpoint]=40000 [deployment]=15000 [jinja_template]=20000
  [gguf]=20000 [grammar]=20000
)
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(openai_request ws_message hf_tokenizer safetensors llama2c_tokenizer
                                           llama2c_checkpoint deployment jinja_template gguf grammar)

# Symbolized stack traces in reports (llvm-16 from scripts/install-deps.sh).
[ -d /usr/lib/llvm-16/bin ] && export PATH="/usr/lib/llvm-16/bin:$PATH"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
common=(-timeout=25 -rss_limit_mb=2048 -print_final_stats=1)

bin_of() {
  local bin="$build/bin/inflight_fuzz_$1"
  [ -x "$bin" ] || bin="$build/tests/fuzz/inflight_fuzz_$1"
  if [ ! -x "$bin" ]; then
    echo "run-fuzz: $bin is not built (cmake --build $build)" >&2
    exit 1
  fi
  echo "$bin"
}

# The "stat::number_of_executed_units" libFuzzer prints at exit.
num_execs() { sed -n 's/^stat::number_of_executed_units: *//p' "$1" | tail -1; }

replay_regressions() {
  local name=$1 bin=$2 dir="$here/regression/$1"
  local inputs=()
  [ -d "$dir" ] && mapfile -t inputs < <(find "$dir" -type f ! -name '*.md' | sort)
  [ ${#inputs[@]} -gt 0 ] || return 0
  if ! "$bin" "${common[@]}" "${inputs[@]}" >"$build/fuzz-logs/$name.regression.log" 2>&1; then
    echo "run-fuzz: $name: a regression input fails again:"
    tail -40 "$build/fuzz-logs/$name.regression.log"
    return 1
  fi
  echo "run-fuzz: $name: ${#inputs[@]} regression inputs pass"
}

run_check() {
  local name=$1 bin
  bin=$(bin_of "$name")
  replay_regressions "$name" "$bin" || return 1
  local runs=$(( ${check_runs[$name]:-5000} * ${FUZZ_RUNS_SCALE:-1} ))
  local work="$build/fuzz-work/$name" log="$build/fuzz-logs/$name.log"
  rm -rf "$work" && mkdir -p "$work"
  # Regression inputs were replayed above; as seeds they would raise max_len for every run.
  local dirs=("$work" "$here/corpus/$name")
  if ! "$bin" "${common[@]}" -runs="$runs" -seed=1 -artifact_prefix="$work/" "${dirs[@]}" >"$log" 2>&1; then
    echo "run-fuzz: $name: FAILED (log: $log)"
    tail -60 "$log"
    return 1
  fi
  printf 'run-fuzz: %-20s %8s executions (seed 1)\n' "$name" "$(num_execs "$log")"
}

run_long() {
  local name=$1 bin
  bin=$(bin_of "$name")
  local corpus="$build/fuzz-corpus/$name" findings="$build/fuzz-findings/$name" log="$build/fuzz-logs/$name.long.log"
  mkdir -p "$corpus" "$findings"
  local dirs=("$corpus" "$here/corpus/$name")
  [ -d "$here/regression/$name" ] && dirs+=("$here/regression/$name")
  local rc=0
  "$bin" "${common[@]}" -max_total_time="${FUZZ_SECONDS:-300}" -max_len="${FUZZ_MAX_LEN:-65536}" \
    -artifact_prefix="$findings/" "${dirs[@]}" >"$log" 2>&1 || rc=$?
  printf 'run-fuzz: %-20s %10s executions in %ss, corpus %s inputs%s\n' "$name" "$(num_execs "$log")" \
    "${FUZZ_SECONDS:-300}" "$(find "$corpus" -type f | wc -l)" "$([ $rc = 0 ] || echo ", FOUND A CRASH: $findings (log: $log)")"
  return $rc
}

mkdir -p "$build/fuzz-logs"
failed=0
case "$mode" in
  check)
    for h in "${harnesses[@]}"; do run_check "$h" || failed=1; done
    ;;
  long)
    export -f run_long bin_of num_execs
    export build here
    export common_str="${common[*]}"
    printf '%s\n' "${harnesses[@]}" |
      xargs -P "${FUZZ_JOBS:-2}" -I{} bash -c 'common=($common_str); run_long {}' || failed=1
    ;;
  *)
    echo "run-fuzz: unknown mode '$mode' (check or long)" >&2
    exit 2
    ;;
esac
exit $failed

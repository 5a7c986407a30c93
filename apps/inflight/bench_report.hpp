#pragma once
// Shared output of the bench commands: summaries as text and JSON, per-request records.

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/bench/bench_metrics.hpp"

namespace inflight::app {

nlohmann::json to_json(const bench::request_record& r);
nlohmann::json to_json(const bench::metric_stats& s);
nlohmann::json to_json(const bench::bench_summary& s);

/// "N of M requests failed: C x ERROR; ..." with the summary's most frequent failures,
/// so a failed run says why in one line; empty when none failed.
std::string failure_line(const bench::bench_summary& s);

/// "2952 refused, 3 timed out": the counts of the outcomes other than completed that
/// occurred, in request_outcome order; empty when every request completed.
std::string outcome_counts(const bench::bench_summary& s);

/// The exit status of a benchmark run whose every table printed but some run lost
/// requests (refused, timed out, shed or failed; not the cancellations it asked for).
inline constexpr int lost_requests_exit_code = 3;

/// `--allow-failures` on `cmd`, into `allow_failures` (the verdict below reads it).
void add_allow_failures_flag(CLI::App& cmd, bool& allow_failures);

/// One labelled run of a benchmark command, for the verdict below.
struct labelled_summary {
  std::string label;
  bench::bench_summary summary;
};

/// After the tables: when a run lost requests, says which and how many on stderr, and,
/// unless `allow_failures` (--allow-failures), ends the command with
/// lost_requests_exit_code.
void check_every_request_completed(const std::string& command, const std::vector<labelled_summary>& runs,
                                   bool allow_failures);

/// The vLLM-style summary block: counts, throughputs, then TTFT / TPOT / ITL / E2EL.
void print_summary(std::FILE* out, const std::string& title, const bench::bench_summary& s);

/// Writes `doc` to `path` (pretty-printed); fails the command on an I/O error.
void write_json_file(const std::string& path, const nlohmann::json& doc);

/// Wall-clock seconds on a monotonic clock (inline: the bench client library uses it too).
inline double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace inflight::app

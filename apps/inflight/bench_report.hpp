#pragma once
// Shared output of the bench commands: summaries as text and JSON, per-request records.

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

/// The vLLM-style summary block: counts, throughputs, then TTFT / TPOT / ITL / E2EL.
void print_summary(std::FILE* out, const std::string& title, const bench::bench_summary& s);

/// Writes `doc` to `path` (pretty-printed); fails the command on an I/O error.
void write_json_file(const std::string& path, const nlohmann::json& doc);

/// Wall-clock seconds on a monotonic clock (inline: the bench client library uses it too).
inline double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace inflight::app

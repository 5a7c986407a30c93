#pragma once
// `inflight simulate`'s sweeps and latency targets, parsed from the command line: one
// run per combination of --sweep values, and --target limits each run is checked against.

#include <optional>
#include <string>
#include <vector>

#include "core/bench/bench_metrics.hpp"

namespace inflight::app {

/// One combination of --sweep values: what it changes.
struct sweep_point {
  std::vector<std::string> labels;  ///< one per --sweep, in order
  std::optional<double> request_rate;
  std::optional<int> max_num_batched_tokens;
  std::optional<int> max_num_seqs;
  std::optional<int> replicas;
};

/// A --sweep's key as given (the column's name).
std::string sweep_key(const std::string& text);

/// --sweep KEY=V1,V2 (request-rate, max_num_batched_tokens, max_num_seqs or replicas; '-'
/// or '_'), repeatable: one point per combination of the values, the first --sweep
/// outermost.
std::vector<sweep_point> parse_sweeps(const std::vector<std::string>& texts);

/// --target METRIC-pNN=MS: a row meets it when that percentile is at most MS.
struct latency_target {
  std::string text;                                   ///< as given
  const bench::metric_stats bench::bench_summary::*metric = nullptr;
  double percentile = 99;
  double limit_ms = 0;
};

std::vector<latency_target> parse_targets(const std::vector<std::string>& texts);

}  // namespace inflight::app

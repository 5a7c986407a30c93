#pragma once
// `inflight simulate`'s results: one row per run, printed as a table (the generation
// workloads' figures, or the rerank workload's per call) and written as JSON.

#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/inflight/simulate_sweep.hpp"
#include "core/bench/sim/simulator.hpp"

namespace inflight::app {

/// A rerank run per call (one query's documents), as `bench offline --workload rerank`
/// reports it: a call's latency is from its arrival to its last document's score.
struct rerank_calls {
  int num_calls = 0;
  int num_failed_calls = 0;  ///< a document of it failed (refused, cancelled, timed out)
  int num_documents = 0;
  long long num_prompt_tokens = 0;
  long long num_cached_tokens = 0;
  bench::metric_stats latency_ms;  ///< of the calls every document of which has a score
  std::vector<double> latency_s;   ///< per call; < 0: failed
};

/// The calls of a rerank run (prompts grouped by their call).
rerank_calls summarize_calls(const sim::sim_result& r, const std::vector<bench::bench_prompt>& prompts,
                             const std::vector<double>& percentiles);

struct run_row {
  std::string policy;
  sweep_point point;
  int replicas = 1;
  std::string route = "-";  ///< the routing policy, with several replicas
  double request_rate = INFINITY;
  int budget = 0;
  int max_num_seqs = 0;
  sim::sim_result result;
  std::optional<rerank_calls> calls;  ///< the rerank workload's
  std::optional<std::array<std::size_t, 3>> replay;  ///< replay: steps replayed, differing, recorded
};

/// A percentile of `m` (0 when it was not computed).
double pct(const bench::metric_stats& m, double p);

/// Whether a run meets every --target.
bool meets(const run_row& row, const std::vector<latency_target>& targets);

/// The generation workloads' table; `show_route`: the replicas (unless a sweep column
/// shows them) and the routing policy. With targets, a `meets` column and the answer line.
void print_table(const std::vector<run_row>& rows, const std::vector<std::string>& keys,
                 const std::vector<latency_target>& targets, bool show_route);
/// Speculative decoding's drafts and kept tokens of each run (simulate --spec-acceptance).
void print_speculative(const std::vector<run_row>& rows);

/// The rerank workload's table, per call, as `bench offline --workload rerank` prints it.
void print_rerank_table(const std::vector<run_row>& rows, const std::vector<std::string>& keys, bool show_route);

/// One run: its settings, summary, every request's record, and what its options add.
nlohmann::json to_json(const run_row& row, const std::vector<std::string>& keys,
                       const std::vector<latency_target>& targets);

}  // namespace inflight::app

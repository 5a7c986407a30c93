#pragma once
// The `structured` workload's report, shared by `bench offline` and `bench serve`: each
// run once with its JSON Schema constraints and once without (the same prompts, each
// with max_tokens = the tokens its constrained run produced, so both runs generate the
// same number of tokens per request), throughput both ways and the ratio, and the
// grammar's compile and mask times.

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/bench/bench_metrics.hpp"
#include "core/bench/dataset.hpp"
#include "core/engine/metrics/metrics.hpp"
#include "core/grammar/token_index.hpp"

namespace inflight::app {

/// The project's target: constrained throughput at least this share of unconstrained.
inline constexpr double structured_target_ratio = 0.95;

/// How the constrained outputs ended and whether they parse as JSON.
struct output_check {
  int num_stop = 0;         ///< finished by the grammar (complete) or a stop token
  int num_length = 0;       ///< cut by max_tokens or the context
  int num_checked = 0;      ///< outputs whose text was checked (bench serve)
  int num_valid_json = 0;   ///< of them, parse as JSON
  int num_cut_unparsable = 0;  ///< do not parse, cut by length (a prefix of a valid text)
  int num_unparsable = 0;      ///< do not parse although not cut: a constraint failure
};

/// Counts finish reasons; with `has_text` (the records kept their output) parses each text.
output_check check_outputs(const std::vector<bench::request_record>& records, bool has_text);

/// One constrained / unconstrained pair of runs.
struct structured_pair {
  std::string label;  ///< the policy (offline) or "serve"
  bench::bench_summary constrained, unconstrained;
  output_check outputs;
  histogram_counts mask_seconds;  ///< grammar_mask_seconds observed during the constrained run
};

/// `prompts` with each output_len set to the output tokens of its constrained record
/// (at least 1) and no schema.
std::vector<bench::bench_prompt> matched_unconstrained(const std::vector<bench::bench_prompt>& prompts,
                                                       const std::vector<bench::request_record>& constrained);

/// Cold compile timings of the distinct schemas of `prompts`, and each prompt's compiled
/// constraint (one token index per distinct schema, built over `vocab`).
struct compiled_schemas {
  std::vector<double> compile_s;       ///< each cold compile (schema text to grammar)
  std::vector<double> index_build_s;   ///< each distinct schema's token index, all positions
  std::vector<std::shared_ptr<const token_index>> per_prompt;
};
result<compiled_schemas> compile_prompt_schemas(const std::vector<bench::bench_prompt>& prompts,
                                                const std::shared_ptr<const grammar_vocab>& vocab, int num_compiles);

/// The table: throughput both ways, ratio against the target, outputs, mask times.
void print_structured_table(std::FILE* out, const std::vector<structured_pair>& pairs);

/// With pairs run `repeat` times in a row per label: each group's median ratio.
void print_median_ratios(std::FILE* out, const std::vector<structured_pair>& pairs, int repeat);

nlohmann::json to_json(const structured_pair& p);
nlohmann::json to_json(const histogram_counts& h);

}  // namespace inflight::app

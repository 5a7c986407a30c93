#pragma once
/// Figures of the grammar layer alone, against a real vocabulary: cold compile time
/// (the grammar_cache bypassed), token_index build time, and the time of one
/// next-token mask on random walks through each schema (at each step: the mask, a
/// random allowed token, advance; until the grammar can finish or a step limit).

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/bench/structured_workload.hpp"
#include "core/grammar/token_index.hpp"

namespace inflight::bench {

struct grammar_bench_options {
  int num_compiles = 10;  ///< cold compiles per schema (the first also builds the token index)
  int num_walks = 20;     ///< random walks per schema
  int max_steps = 256;    ///< steps per walk at most
  /// Share of steps that pick among the allowed tokens holding JSON punctuation or a
  /// digit, so that walks leave strings and reach the end of the schema.
  double structural_bias = 0.5;
  /// Copies of a bounded repetition share token-index lists (off: each copy classified alone).
  bool share_copies = true;
  bool leo = true;  ///< the Earley parser's one-step tail-call completions
};

/// What one schema measured; times in seconds.
struct schema_timings {
  std::string name;
  std::vector<double> compile_s;   ///< each cold compile (front-end to a grammar)
  double index_build_s = 0.0;      ///< token_index::warm_up() of the first compile
  std::size_t num_positions = 0;   ///< grammar positions that scan a byte (index entries)
  std::vector<double> mask_s;      ///< every fill_next_token_mask() of every walk
  int num_walks = 0;
  int num_finished = 0;            ///< walks that reached a text where the grammar can finish
  int num_valid_json = 0;          ///< of them, texts that parse as JSON
  std::size_t num_allowed_sum = 0; ///< allowed tokens summed over the steps
};

/// Compiles `schema` `o.num_compiles` times, builds one token index over `vocab`, and
/// walks it. Errors when the schema does not compile.
result<schema_timings> measure_schema(const named_schema& schema, const std::shared_ptr<const grammar_vocab>& vocab,
                                      const grammar_bench_options& o, std::mt19937_64& rng);

/// The ids of the set bits of `mask`, ascending, without `vocab`'s EOS ids.
std::vector<token_id> allowed_tokens(const std::vector<std::uint64_t>& mask, const grammar_vocab& vocab);

}  // namespace inflight::bench

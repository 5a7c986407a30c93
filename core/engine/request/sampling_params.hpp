#pragma once
/// Per-request sampling settings. Defaults are greedy-free sampling as OpenAI's API does
/// (temperature 1); temperature 0 means greedy.

#include <cstdint>
#include <memory>
#include <vector>

#include "core/base/types.hpp"

namespace inflight {

class token_index;  // core/grammar/token_index.hpp

/// One OpenAI `logit_bias` entry: added to the token's logit before sampling.
struct logit_bias_entry {
  token_id token = 0;
  float bias = 0.0f;  ///< [-100, 100]
  friend bool operator==(const logit_bias_entry&, const logit_bias_entry&) = default;
};

struct sampling_params {
  float temperature = 1.0f;         ///< 0 = greedy (arg-max)
  int top_k = 0;                    ///< 0 or < 0 = off
  float top_p = 1.0f;               ///< 1 = off
  float min_p = 0.0f;               ///< 0 = off
  float repetition_penalty = 1.0f;  ///< 1 = off; over prompt and output tokens
  float presence_penalty = 0.0f;    ///< over output tokens
  float frequency_penalty = 0.0f;   ///< over output tokens
  int max_tokens = 16;
  bool ignore_eos = false;
  std::vector<token_id> stop_token_ids;
  int logprobs = 0;                 ///< number of top logprobs to return (0 = none)
  std::vector<logit_bias_entry> logit_bias;  ///< empty = none
  /// Constrained decoding: the compiled grammar (from core/grammar's grammar_cache) whose
  /// allowed-token mask applies before sampling; null = unconstrained. Shared, immutable.
  std::shared_ptr<const token_index> grammar;

  bool is_greedy() const { return temperature <= 0.0f; }
  bool has_penalties() const {
    return repetition_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f;
  }
};

}  // namespace inflight

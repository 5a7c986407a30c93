#pragma once
/// Per-request sampling settings. Defaults are greedy-free sampling as OpenAI's API does
/// (temperature 1); temperature 0 means greedy.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/types.hpp"

namespace inflight {

class token_index;  // core/grammar/token_index.hpp

/// Most top logprobs a request may ask for (OpenAI's limit).
inline constexpr int max_top_logprobs = 20;

/// Largest |bias| of a logit_bias entry (OpenAI's range).
inline constexpr float max_logit_bias = 100.0f;

/// Temperatures below this sample greedily: dividing by them overflows the scaled logits.
inline constexpr float min_temperature = 1e-5f;

/// The least max_tokens a request may ask for (a request always generates a token).
inline constexpr int min_max_tokens = 1;

/// One OpenAI `logit_bias` entry: added to the token's logit before sampling.
struct logit_bias_entry {
  token_id token = 0;
  float bias = 0.0f;  ///< [-100, 100]
  friend bool operator==(const logit_bias_entry&, const logit_bias_entry&) = default;
};

/// A thinking model's reasoning at the start of its output (`<think>` ... `</think>`, each
/// one token): the grammar constrains the answer after `end_token`, not the reasoning, and
/// `budget` caps the reasoning (reached: `end_token` is the only token allowed next).
/// When the prompt did not open the reasoning (`is_open` false), the first token may open
/// it (`begin_token`) or start the answer.
struct reasoning_phase {
  token_id begin_token = 0;
  token_id end_token = 0;
  bool is_open = false;
  std::optional<int> budget = std::nullopt;  ///< most reasoning tokens (the begin and end tokens not counted)
  friend bool operator==(const reasoning_phase&, const reasoning_phase&) = default;
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
  /// The output starts with reasoning the grammar does not constrain; none = no reasoning
  /// phase (the grammar applies from the first token).
  std::optional<reasoning_phase> reasoning;

  bool is_greedy() const { return temperature <= 0.0f; }
  bool has_penalties() const {
    return repetition_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f;
  }
};

/// Checks that the values of `params` are in range (temperature >= 0, top_p in (0, 1],
/// min_p in [0, 1], repetition_penalty > 0, max_tokens >= min_max_tokens, logprobs in
/// [0, 20], logit_bias ids >= 0 and biases in [-100, 100], ...): the one place these
/// rules are written. The gateway calls it to reject a bad request before it reaches the
/// engine, the engine and the scheduler to take none they cannot run.
result<void> try_validate(const sampling_params& params);

/// The stop-token rule, the one place it is written (the scheduler finishes a sequence
/// on such a token; its request actor sends no text for it): true when `token` is one
/// of params.stop_token_ids, or one of `eos_ids` unless params.ignore_eos.
inline bool is_stop_token(token_id token, const sampling_params& params, std::span<const token_id> eos_ids) {
  if (std::ranges::find(params.stop_token_ids, token) != params.stop_token_ids.end()) return true;
  return !params.ignore_eos && std::ranges::find(eos_ids, token) != eos_ids.end();
}

}  // namespace inflight

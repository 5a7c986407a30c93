#pragma once
/// Sampling one token from one row of logits: pure functions of the row, the request's
/// sampling_params, its token history and its RNG key (seed, sample_index).
///
/// Pipeline of sample():
///   penalties -> greedy if temperature < min_temperature (arg-max, ties to the lowest id)
///   -> temperature -> top-k -> top-p -> min-p -> one uniform draw (inverse CDF).
///
/// Logprobs (the chosen token's and top_logprobs) are taken from the log-softmax of the
/// RAW logits, before penalties and temperature: they describe what the model predicted,
/// stay comparable across sampling settings, and match vLLM's default ("raw") mode and
/// OpenAI's API, where logprobs do not depend on temperature.

#include <cstdint>
#include <span>

#include "core/error.hpp"
#include "core/sampling/sampling_params.hpp"
#include "core/sched/step_plan.hpp"
#include "core/types.hpp"

namespace inflight {

/// Most top logprobs a request may ask for (OpenAI's limit).
inline constexpr int max_top_logprobs = 20;

/// Temperatures below this sample greedily: dividing by them overflows the scaled logits.
inline constexpr float min_temperature = 1e-5f;

/// Checks that the values of `params` are in range (temperature >= 0, top_p in (0, 1],
/// min_p in [0, 1], repetition_penalty > 0, logprobs in [0, 20], ...): for the edge to
/// reject a bad request before it is scheduled. The functions below assume valid params.
result<void> try_validate(const sampling_params& params);

/// Applies the penalties of `params` to `logits` in place.
/// - repetition (HF / vLLM): for each distinct token of the prompt or the output,
///   logit > 0 ? logit / p : logit * p.
/// - presence and frequency (OpenAI), over output tokens only:
///   logit -= presence * (count > 0) + frequency * count.
/// `history` is prompt + output; its first `num_prompt_tokens` are the prompt. Ids outside
/// the row are ignored.
void apply_penalties(std::span<float> logits, const sampling_params& params,
                     std::span<const token_id> history, int num_prompt_tokens);

/// Samples one token from `logits` (see the pipeline above). The draw depends only on the
/// row, `params`, `history` and (seed, sample_index), never on what else is batched.
/// Fills token, logprob and, when params.logprobs > 0, top_logprobs sorted by descending
/// logprob (ties to the lowest id). `id` of the result is left 0 for the caller to set.
/// Uses a thread-local scratch: no allocation per call once it has grown to the vocab.
sampled_token sample(std::span<const float> logits, const sampling_params& params,
                     std::span<const token_id> history, int num_prompt_tokens, std::uint64_t seed,
                     std::uint64_t sample_index);

/// True when `token` ends generation: one of params.stop_token_ids, or one of `eos_ids`
/// unless params.ignore_eos.
bool is_stop_token(token_id token, const sampling_params& params,
                   std::span<const token_id> eos_ids);

}  // namespace inflight

#pragma once
/// The logit processors of the one sampling pipeline, applied to a copy of one sampled
/// row in a fixed order before the token is chosen:
///
///   penalties -> logit_bias -> grammar mask -> (sampler: greedy, or T / top-k / top-p / min-p)
///
/// The mask comes last so that nothing after it can lift a disallowed token back above
/// -inf, and the bias comes after the penalties as in vLLM (a bias is an absolute
/// request of the client; penalties scale the model's own logits).

#include <cstdint>
#include <span>

#include "core/base/types.hpp"
#include "core/engine/request/sampling_params.hpp"

namespace inflight {

/// Applies the penalties of `params` to `logits` in place.
/// - repetition (HF / vLLM): for each distinct token of the prompt or the output,
///   logit > 0 ? logit / p : logit * p.
/// - presence and frequency (OpenAI), over output tokens only:
///   logit -= presence * (count > 0) + frequency * count.
/// `history` is prompt + output; its first `num_prompt_tokens` are the prompt. Ids outside
/// the row are ignored.
void apply_penalties(std::span<float> logits, const sampling_params& params,
                     std::span<const token_id> history, int num_prompt_tokens);

/// Adds each entry's bias to its token's logit (OpenAI `logit_bias`); entries for ids
/// outside the row are ignored, entries for the same id add up.
void apply_logit_bias(std::span<float> logits, std::span<const logit_bias_entry> bias);

/// Sets the logits of the tokens whose bit is clear in `allowed` (bit id % 64 of word
/// id / 64) to -inf. Ids past the mask's words are disallowed (a model vocabulary padded
/// beyond the tokenizer's). An empty mask allows everything (nothing to apply).
void apply_token_mask(std::span<float> logits, std::span<const std::uint64_t> allowed);

/// Whether any processor changes a row of this request (otherwise the sampler reads the
/// raw logits without copying them).
inline bool has_logit_processors(const sampling_params& params, std::span<const std::uint64_t> allowed) {
  return params.has_penalties() || !params.logit_bias.empty() || !allowed.empty();
}

/// What greedy sampling takes from `logits` under the mask `allowed` alone: the first
/// allowed token of the largest logit, as arg-max over a copy with apply_token_mask()
/// would give, without writing that copy (0 when no allowed logit is above -inf).
token_id greedy_allowed_token(std::span<const float> logits, std::span<const std::uint64_t> allowed);

/// Every processor, in the pipeline's order, on `logits` in place.
void apply_logit_processors(std::span<float> logits, const sampling_params& params,
                            std::span<const token_id> history, int num_prompt_tokens,
                            std::span<const std::uint64_t> allowed);

}  // namespace inflight

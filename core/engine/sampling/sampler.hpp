#pragma once
/// Sampling one token from one row of logits: pure functions of the row, the request's
/// sampling_params, its token history, its allowed-token mask and its RNG key
/// (seed, sample_index). Every backend samples every row through sample(): one pipeline.
///
/// Pipeline of sample() (see logit_processors.hpp for the processors):
///   penalties -> logit_bias -> grammar mask (disallowed -> -inf)
///   -> greedy if temperature < min_temperature (arg-max, ties to the lowest id)
///   -> else temperature -> top-k -> top-p -> min-p -> one uniform draw (inverse CDF).
///
/// Logprobs (the chosen token's and top_logprobs) are taken from the log-softmax of the
/// RAW logits, before every processor and temperature: they describe what the model
/// predicted, stay comparable across sampling settings, and match vLLM's default
/// ("raw_logprobs") mode and OpenAI's API, where logprobs do not depend on temperature,
/// logit_bias or a response format. So a top_logprobs entry may name a token that the
/// grammar or a -100 bias made impossible.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/types.hpp"
#include "core/engine/request/sampling_params.hpp"
#include "core/engine/sampling/logit_processors.hpp"
#include "core/engine/step/step_plan.hpp"

namespace inflight {

/// The functions below assume params that try_validate (sampling_params.hpp) accepted.

/// Samples one token from `logits` (see the pipeline above). The draw depends only on the
/// row, `params`, `history`, `allowed_tokens` and (seed, sample_index), never on what else
/// is batched. `allowed_tokens`: the grammar's mask (bit id set = allowed), empty = none.
/// Fills token, logprob and, when params.logprobs > 0, top_logprobs sorted by descending
/// logprob (ties to the lowest id). `id` of the result is left 0 for the caller to set.
/// A mask that allows no token of the row yields id 0 (its owner refuses it).
/// Uses a thread-local scratch: no allocation per call once it has grown to the vocab.
sampled_token sample(std::span<const float> logits, const sampling_params& params,
                     std::span<const token_id> history, int num_prompt_tokens, std::uint64_t seed,
                     std::uint64_t sample_index, std::span<const std::uint64_t> allowed_tokens = {});

/// sample() with everything a seq_step carries: what the backends call per sampled row.
sampled_token sample(std::span<const float> logits, const seq_step& step);

/// The one loop over a step's sampled rows, which every backend samples through: for
/// each seq_step that samples, in plan order, `pick(step, row)`, where row is its index
/// among them (its row of the step's logits). The tokens come back with their ids set.
template <class Pick>
std::vector<sampled_token> sample_rows(const step_plan& plan, Pick&& pick) {
  std::vector<sampled_token> out;
  std::size_t row = 0;
  for (const auto& s : plan.seqs) {
    if (!s.do_sample) continue;
    sampled_token token = pick(s, row++);
    token.id = s.id;
    out.push_back(std::move(token));
  }
  return out;
}

/// True when the step's token is the arg-max of its raw logits and only that token's
/// logprob is asked (greedy, no processor, no top logprobs): a backend may pick it on the
/// device without running sample(), with the same answer.
bool is_raw_greedy(const seq_step& step);
/// A greedy row whose only processor is its grammar mask, without top logprobs: sample()
/// takes the arg-max among the allowed tokens (greedy_allowed_token) and the unmasked
/// row's logprob, which a backend may compute where its logits are (the cuda backend's
/// engine.cuda_grammar_mask = "device").
bool is_masked_greedy(const seq_step& step);

}  // namespace inflight

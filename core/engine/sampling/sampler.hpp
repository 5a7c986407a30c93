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
/// `row` numbers the step's sample rows (0 .. num_draft): row i samples after the draft's
/// first i tokens (its history, its RNG index and its grammar mask follow them).
sampled_token sample(std::span<const float> logits, const seq_step& step, int row = 0);

/// The one loop over a step's sampled rows, which every backend samples through: for
/// each seq_step that samples, in plan order, `pick(step, logit_row, row)`, where
/// logit_row is the row's index among the step's logits and row its index in the
/// sequence (0 .. num_draft). The tokens come back with their ids set.
///
/// Speculative decoding is checked here, the same way on every backend: a drafted token
/// is kept when the token its row samples equals it, and the first token that differs
/// ends the sequence's tokens (the rows after it followed a refuted guess). Each row
/// samples exactly as the step without a draft would have at that position (same
/// history, same (seed, sample_index) draw, same mask), so the output is the one decoding
/// without speculation gives, token for token, greedy or seeded. For a drafter whose
/// proposal is one token (ngram, suffix, a greedy draft model) this is speculative
/// sampling (Leviathan et al. 2023; Chen et al. 2023): the drafted x is kept with
/// probability p(x), and a refused draft's token is drawn from p without x.
template <class Pick>
std::vector<sampled_token> sample_rows(const step_plan& plan, Pick&& pick) {
  std::vector<sampled_token> out;
  std::size_t logit_row = 0;
  for (const auto& s : plan.seqs) {
    const int num_rows = s.num_sample_rows();
    for (int i = 0; i < num_rows; ++i) {
      sampled_token token = pick(s, logit_row + std::size_t(i), i);
      token.id = s.id;
      const bool is_kept = i < s.num_draft && token.token == s.draft_token(i);
      out.push_back(std::move(token));
      if (!is_kept) break;
    }
    logit_row += std::size_t(num_rows);
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

#pragma once
/// Checking a draft against the target model: which drafted tokens are kept, and the
/// token that follows them. Rows are the target's distributions at the draft's
/// positions: row i follows the sequence and the draft's first i tokens, so k drafted
/// tokens come with k + 1 rows (the last one follows a fully kept draft).
///
/// Greedy: a drafted token is kept while it is the row's argmax; the next token is the
/// argmax of the first row that refuted the draft (or of the last row): the output is
/// the one greedy decoding gives, token for token.
///
/// Sampled: standard speculative sampling (Leviathan et al. 2023; Chen et al. 2023) with
/// a deterministic drafter, whose proposal is one-hot: drafted token x at row i is kept
/// with probability p_i(x); when refused, the next token is drawn from p_i without x
/// (renormalised: the residual max(p - q, 0) of a one-hot q). Every emitted token then
/// has the target's distribution, whatever the drafter proposed.

#include <span>
#include <vector>

#include "core/base/types.hpp"
#include "core/engine/sampling/rng.hpp"

namespace inflight {

struct draft_verdict {
  int num_accepted = 0;  ///< the draft's first num_accepted tokens are kept
  token_id next = -1;    ///< then this token: the target's correction, or the token after the whole draft
};

/// Greedy check over `rows` of logits or probabilities (draft.size() + 1 rows; ties go
/// to the lowest id, as the greedy sampler breaks them).
draft_verdict verify_greedy(std::span<const token_id> draft, std::span<const std::vector<float>> rows);

/// Sampled check over `probs`, probability rows (draft.size() + 1 of them, each summing
/// to 1: the target's distributions after temperature, top-k/p and every processor).
draft_verdict verify_sampled(std::span<const token_id> draft, std::span<const std::vector<float>> probs,
                             counter_rng& rng);

}  // namespace inflight

#pragma once
/// Prompt lookup, the `ngram` drafter of speculative decoding: the last n tokens of a
/// sequence (prompt and output so far) are looked for earlier in it, and the tokens that
/// followed their latest earlier occurrence are the draft. The longest n in
/// [min_n, max_n] that occurs wins. No model and no state: a function of the sequence.
///
///   tokens: ... a b c x y ... a b c | ?      (n = 3: "a b c" occurred before)
///   draft:  x y ...                          (what followed it, k tokens)
///
/// Past the sequence's end the copy goes on as the repeat does (an overlapping copy): a
/// loop "x y x y" drafts "x y x y ...", not only the two tokens seen after the match.

#include <span>
#include <vector>

#include "core/base/types.hpp"

namespace inflight {

struct ngram_settings {
  int min_n = 1;  ///< the shortest suffix looked up
  int max_n = 3;  ///< the longest, tried first
};

/// `k` tokens to follow `tokens`; empty when no suffix of min_n..max_n tokens occurred
/// earlier (or k <= 0).
std::vector<token_id> ngram_draft(std::span<const token_id> tokens, int k, const ngram_settings& s = {});

}  // namespace inflight

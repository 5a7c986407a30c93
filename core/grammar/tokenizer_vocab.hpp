#pragma once
/// The grammar view of a tokenizer's vocabulary. Header-only: it calls the tokenizer's
/// virtual interface, so the grammar library needs nothing of core/model/tokenizer to link.

#include <memory>
#include <string>
#include <vector>

#include "core/grammar/token_index.hpp"
#include "core/model/tokenizer/tokenizer.hpp"

namespace inflight {

/// Each token's text as it appears in the middle of generated text (after a token that
/// is not BOS, so sentencepiece-style leading spaces are kept); special tokens have no
/// text and never match. EOS ids are the tokenizer's.
inline std::shared_ptr<const grammar_vocab> make_grammar_vocab(const tokenizer& tok) {
  const int n = tok.vocab_size();
  const auto bos = tok.bos_id();
  token_id prev = 0;
  while (prev < n && bos && prev == *bos) ++prev;
  std::vector<std::string> bytes(static_cast<std::size_t>(n));
  for (token_id id = 0; id < n; ++id) bytes[static_cast<std::size_t>(id)] = tok.token_bytes(prev, id);
  return std::make_shared<const grammar_vocab>(std::move(bytes), tok.eos_ids());
}

}  // namespace inflight

// llama2c_tokenizer built from a SentencePiece-style vocabulary in memory (GGUF).
#include <algorithm>

#include "core/model/tokenizer/llama2c_tokenizer.hpp"

namespace inflight {

namespace {

std::unexpected<error> corrupt(std::string message) {
  return make_error(errc::corrupt_file, "tokenizer vocabulary: " + std::move(message));
}

result<void> check_vocab(const spm_vocab& v) {
  const std::size_t n = v.pieces.size();
  if (n == 0) return corrupt("no tokens");
  if (n > std::size_t(1) << 24) return corrupt(std::to_string(n) + " tokens is more than any real vocabulary");
  if (v.scores.size() != n || v.kinds.size() != n) {
    return corrupt(std::to_string(n) + " tokens but " + std::to_string(v.scores.size()) + " scores and " +
                   std::to_string(v.kinds.size()) + " token types");
  }
  for (const auto& [name, id] : {std::pair{"BOS", v.bos_id}, std::pair{"EOS", v.eos_id}, std::pair{"unknown", v.unk_id}}) {
    if (id < 0 || std::size_t(id) >= n) {
      return corrupt(std::string(name) + " token id " + std::to_string(id) + " is outside the " +
                     std::to_string(n) + " tokens");
    }
  }
  return {};
}

}  // namespace

result<std::unique_ptr<llama2c_tokenizer>> llama2c_tokenizer::try_from_vocab(spm_vocab vocab) {
  if (auto ok = check_vocab(vocab); !ok) return std::unexpected(ok.error());
  std::unique_ptr<llama2c_tokenizer> tok(new llama2c_tokenizer());
  tok->bos_id_ = vocab.bos_id;
  tok->eos_id_ = vocab.eos_id;
  tok->unk_id_ = vocab.unk_id;
  tok->adds_bos_ = vocab.adds_bos;
  tok->add_space_prefix_ = vocab.add_space_prefix;
  tok->pieces_ = std::move(vocab.pieces);
  tok->scores_ = std::move(vocab.scores);
  tok->kinds_ = std::move(vocab.kinds);
  for (const auto& piece : tok->pieces_) {
    tok->max_token_length_ = std::max(tok->max_token_length_, int(piece.size()));
  }
  tok->index_pieces();
  // Control, user-defined and unknown tokens are never split: as llama.cpp, they are
  // matched in the text first.
  std::vector<added_token> specials;
  for (std::size_t i = 0; i < tok->pieces_.size(); ++i) {
    const auto kind = tok->kinds_[i];
    const bool is_matched = kind == spm_token_kind::control || kind == spm_token_kind::user_defined ||
                            kind == spm_token_kind::unknown;
    if (!is_matched || tok->pieces_[i].empty() || tok->ids_.at(tok->pieces_[i]) != token_id(i)) continue;
    specials.push_back({token_id(i), tok->pieces_[i], kind == spm_token_kind::control, false, false});
  }
  tok->specials_ = added_token_matcher(specials);
  return tok;
}

}  // namespace inflight

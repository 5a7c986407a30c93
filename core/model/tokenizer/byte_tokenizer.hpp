#pragma once
/// A byte-level tokenizer for dummy models: 0 <unk>, 1 <s> (BOS), 2 </s> (EOS), then
/// one token per byte (id = byte + 3). Ids past 258 (a larger dummy vocabulary) are
/// unused and decode to nothing.

#include "core/model/tokenizer/tokenizer.hpp"

namespace inflight {

class byte_tokenizer final : public tokenizer {
 public:
  static constexpr token_id bos_token = 1;
  static constexpr token_id eos_token = 2;
  static constexpr token_id byte_offset = 3;
  static constexpr int min_vocab_size = 259;

  explicit byte_tokenizer(int vocab_size = min_vocab_size) : vocab_size_(vocab_size) {}

  std::vector<token_id> encode(std::string_view text, bool add_bos) const override;
  std::string token_bytes(token_id prev, token_id token) const override;
  std::string piece(token_id token) const override;
  int vocab_size() const override { return vocab_size_; }
  std::optional<token_id> bos_id() const override { return bos_token; }
  std::vector<token_id> eos_ids() const override { return {eos_token}; }

 private:
  int vocab_size_;
};

}  // namespace inflight

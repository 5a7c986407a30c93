#pragma once
/// The tokenizer interface shared by llama2.c tokenizer.bin and tokenizer.json models.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/types.hpp"

namespace inflight {

class tokenizer {
 public:
  virtual ~tokenizer() = default;

  /// Token ids of `text`, with BOS first when `add_bos`.
  virtual std::vector<token_id> encode(std::string_view text, bool add_bos) const = 0;
  /// Raw bytes of one token as it appears in text, given the previous token
  /// (some formats drop a leading space after BOS). Special tokens give "".
  virtual std::string token_bytes(token_id prev, token_id token) const = 0;
  /// The vocabulary entry as written in the file (for /detokenize, logprobs).
  virtual std::string piece(token_id token) const = 0;
  virtual int vocab_size() const = 0;
  virtual std::optional<token_id> bos_id() const = 0;
  virtual std::vector<token_id> eos_ids() const = 0;
  /// True when BOS is prepended by default.
  virtual bool adds_bos() const { return bos_id().has_value(); }
};

/// Turns a stream of token ids into text deltas that never split a UTF-8 character:
/// bytes of an incomplete character are held until it completes.
class incremental_decoder {
 public:
  explicit incremental_decoder(const tokenizer& tok, token_id prev = -1) : tok_(&tok), prev_(prev) {}
  /// Text that became complete with `token` (possibly empty).
  std::string push(token_id token);
  /// Whatever is held at the end (an incomplete character is emitted as U+FFFD).
  std::string flush();

 private:
  const tokenizer* tok_;
  token_id prev_;
  std::string pending_;
};

/// Length of the longest prefix of `bytes` made of complete, valid UTF-8 characters,
/// stopping before a trailing incomplete character. Invalid bytes count as complete
/// (they are replaced by U+FFFD on output).
std::size_t complete_utf8_prefix(std::string_view bytes);

/// True when `text` is valid UTF-8.
bool is_valid_utf8(std::string_view text);

}  // namespace inflight

#pragma once
/// The grammar state of one sequence: which tokens may come next, taking tokens, rolling
/// them back. One matcher per sequence, owned by whoever appends its tokens; the
/// token_index it reads is shared and immutable (its lazy lists are thread-safe).
///
/// fill_next_token_mask():
///   1. the distinct byte-scanning positions of the last Earley set;
///   2. union of their accepted tokens (token_index, independent of the stack);
///   3. each of their uncertain tokens not yet allowed is run through this parser, in
///      sorted order so that consecutive tokens share their common prefix;
///   4. EOS ids when the grammar can finish here.

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/grammar/earley.hpp"
#include "core/grammar/token_index.hpp"

namespace inflight {

class grammar_matcher {
 public:
  explicit grammar_matcher(std::shared_ptr<const token_index> index);

  /// Takes one token: its bytes must continue the grammar; an EOS id is taken when the
  /// grammar can finish (and ends the matcher). False, with nothing changed, otherwise.
  bool try_accept_token(token_id token);
  /// Takes raw bytes (e.g. a forced prefix); counts as one step for rollback.
  bool try_accept_bytes(std::string_view bytes);
  /// Undoes the last `num_steps` accepted tokens (or byte strings). False when fewer were taken.
  bool try_rollback(std::size_t num_steps);
  void reset();

  /// The text so far is a complete sentence of the grammar: EOS is allowed.
  bool can_finish() const { return !is_ended_ && parser_.can_finish(); }
  /// EOS was accepted; nothing more may come.
  bool is_ended() const { return is_ended_; }
  /// Nothing but EOS can come next.
  bool is_complete() const { return is_ended_ || !parser_.can_continue(); }
  std::size_t num_steps() const { return step_sizes_.size(); }

  /// Writes the allowed next tokens into `mask` (bit id of word id / 64), which must
  /// have vocab().num_mask_words() words.
  void fill_next_token_mask(std::span<std::uint64_t> mask);
  /// The allowed next tokens as a fresh mask.
  std::vector<std::uint64_t> next_token_mask();

  const token_index& index() const { return *index_; }

 private:
  void check_uncertain(std::vector<std::uint32_t>& uncertain, std::span<std::uint64_t> mask);

  std::shared_ptr<const token_index> index_;
  earley_parser parser_;
  std::vector<std::uint32_t> step_sizes_;  // bytes per accepted step; EOS is 0
  bool is_ended_ = false;
  std::vector<std::uint32_t> scratch_positions_;
  std::vector<std::uint32_t> scratch_uncertain_;
};

/// True when bit `id` of `mask` is set.
inline bool mask_has(std::span<const std::uint64_t> mask, token_id id) {
  return (mask[static_cast<std::size_t>(id) >> 6] >> (id & 63)) & 1;
}

}  // namespace inflight

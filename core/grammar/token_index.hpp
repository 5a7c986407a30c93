#pragma once
/// What a grammar needs to know about a tokenizer's vocabulary, and the per-grammar,
/// per-vocabulary cache of which tokens each grammar position accepts.
///
/// grammar_vocab sorts the tokens by their bytes; with the length of the prefix each
/// shares with the one before it (lcp), the sorted list is a trie walked depth-first:
/// going from one token to the next pops the parser back to the shared prefix and pushes
/// only the rest, and a prefix that dies skips every token under it.
///
///   sorted:  "a"  "ab"  "abc"  "b"  "ba"
///   lcp:      0    1     2      0    1
///
/// token_index classifies, for each grammar position where a byte is scanned (an Earley
/// item's dot before a byte set), every token as
///   accepted  - the token's bytes fit inside the position's rule (and its transparent
///               callers), whatever the parser stack below holds;
///   rejected  - they die inside the rule without ever completing it;
///   uncertain - they complete the rule part-way, so the stack decides (checked at run time).
/// These lists are computed once per position, on first use (thread-safe) or by warm_up().
///
/// A bounded repetition (a string's maxLength) lowers into one copy of its item per
/// repetition (grammar::repeats()), and each copy's positions would cost a walk over the
/// whole vocabulary. From copy k (at most k more copies follow) a token of at most k bytes
/// cannot reach the chain's end, so it sees the same grammar as from the outermost copy:
/// its class is copied from there, and only the longer tokens are walked (a few thousand
/// of Qwen3's 151k are over 12 bytes).

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/base/types.hpp"
#include "core/grammar/grammar.hpp"
#include "core/grammar/grammar_spec.hpp"

namespace inflight {

class grammar_vocab {
 public:
  /// `token_bytes[id]` is the text of token `id`; "" marks a token that never matches
  /// grammar text (special tokens). `eos_ids` end generation and are allowed exactly when
  /// the grammar can finish.
  grammar_vocab(std::vector<std::string> token_bytes, std::vector<token_id> eos_ids);

  int size() const { return static_cast<int>(bytes_.size()); }
  const std::string& bytes(token_id id) const { return bytes_[static_cast<std::size_t>(id)]; }
  std::span<const token_id> eos_ids() const { return eos_ids_; }
  bool is_eos(token_id id) const;
  /// Number of 64-bit words of a token mask.
  std::size_t num_mask_words() const { return (bytes_.size() + 63) / 64; }

  /// Non-empty tokens sorted by bytes.
  const std::vector<token_id>& sorted() const { return sorted_; }
  /// lcp()[i]: bytes shared by sorted()[i] and sorted()[i - 1] (0 for i = 0).
  const std::vector<std::uint32_t>& lcp() const { return lcp_; }
  /// Sorted indices [first_index(b), first_index(b + 1)) start with byte b.
  std::uint32_t first_index(int b) const { return first_index_[static_cast<std::size_t>(b)]; }
  /// The sorted indices (ascending) of the tokens of at least `n` >= 2 bytes.
  const std::vector<std::uint32_t>& sorted_at_least(std::size_t n) const;

 private:
  std::vector<std::string> bytes_;
  std::vector<token_id> eos_ids_;
  std::vector<token_id> sorted_;
  std::vector<std::uint32_t> lcp_;
  std::vector<std::uint32_t> first_index_;  // 257 entries
  std::vector<std::vector<std::uint32_t>> at_least_;  // [n]: sorted indices of tokens of >= n bytes
};

/// The tokens one grammar position accepts by itself (see the header comment).
struct position_tokens {
  std::vector<std::uint64_t> accepted_bits;  ///< a token mask, when many are accepted
  std::vector<token_id> accepted_ids;        ///< otherwise, the accepted ids
  std::vector<std::uint32_t> uncertain;      ///< sorted indices (ascending) to check at run time
  std::uint32_t num_rejected = 0;
};

class token_index {
 public:
  /// `source`: what `g` was compiled from, when it came from a grammar_spec.
  /// `share_copies`: share lists between the copies of a bounded repetition (see the
  /// header comment); off only to check that sharing changes nothing.
  /// `leo`: the Earley parser's one-step tail-call completions (earley.hpp); off only to
  /// compare build times.
  token_index(std::shared_ptr<const grammar> g, std::shared_ptr<const grammar_vocab> vocab,
              std::optional<grammar_spec> source = std::nullopt, bool share_copies = true, bool leo = true);

  const grammar& grammar_ref() const { return *grammar_; }
  const grammar_vocab& vocab() const { return *vocab_; }
  const std::shared_ptr<const grammar>& grammar_ptr() const { return grammar_; }
  /// What the grammar was compiled from (grammar_cache sets it); none for grammars built directly.
  const std::optional<grammar_spec>& source() const { return source_; }

  /// The lists of `pos` (a bytes element), computed on first use.
  const position_tokens& tokens_at(std::uint32_t pos) const;
  /// Computes the lists of every position now (e.g. off the step loop, after compiling).
  void warm_up() const;
  /// Positions whose lists are computed so far.
  std::size_t num_computed() const;
  /// Positions whose lists come partly from another copy of a bounded repetition.
  std::size_t num_shared() const;

 private:
  // Position `rep` classifies the tokens shorter than `min_len` as this one does.
  struct shared_from {
    std::uint32_t rep = 0;
    std::uint32_t min_len = 0;  // 0: not shared
  };

  void find_shared_copies();
  // Walks the tokens of at least `min_len` bytes from `pos`.
  position_tokens compute(std::uint32_t pos, std::size_t min_len = 0) const;
  position_tokens compute_shared(std::uint32_t pos, shared_from from) const;

  bool leo_ = true;
  std::shared_ptr<const grammar> grammar_;
  std::shared_ptr<const grammar_vocab> vocab_;
  std::optional<grammar_spec> source_;
  std::vector<std::uint32_t> slot_of_pos_;  // bytes elements only
  std::vector<shared_from> shared_;         // per slot
  bool is_root_called_ = false;
  std::unique_ptr<std::once_flag[]> once_;
  // Per slot; a copy deep enough that no token is longer than its depth points at its
  // outermost copy's lists (the same lists, one storage).
  mutable std::vector<std::shared_ptr<const position_tokens>> lists_;
  mutable std::atomic<std::size_t> num_computed_{0};
};

}  // namespace inflight

#pragma once
/// The `suffix` drafter: prompt lookup in the sequence itself first, then in the recent
/// finished sequences of the server (after SuffixDecoding, arXiv 2411.04975, with an
/// n-gram index where the paper keeps a suffix tree). Agent loops call the same tools
/// with the same arguments, and a rewrite repeats what an earlier answer wrote: when the
/// sequence's own history has no match, the tokens that followed its last max_n tokens
/// in the latest finished sequence holding them are the draft.
///
/// The corpus is bounded: the last `max_sequences` finished sequences, at most
/// `max_tokens` tokens in all (the oldest leave first); each sequence's n-grams of
/// max_n tokens are indexed by hash, the latest occurrence first. A sequence that leaves
/// the corpus leaves its places in the index behind (a lookup skips them); the index is
/// built again from the corpus once they outnumber the live ones, so keeping it costs a
/// constant time per token, whatever how common an n-gram is.

#include <cstddef>
#include <deque>
#include <cstdint>
#include <vector>

#include "core/engine/spec/drafter.hpp"

namespace inflight {

struct suffix_settings {
  ngram_settings ngram;                 ///< the lookup lengths (in the sequence and the corpus)
  std::size_t max_sequences = 256;      ///< finished sequences kept
  std::size_t max_tokens = 1u << 20;    ///< their tokens in all
};

class suffix_drafter final : public drafter {
 public:
  explicit suffix_drafter(suffix_settings s = {});
  std::vector<token_id> propose(seq_id id, std::span<const token_id> tokens, int k) override;
  void on_finished(std::span<const token_id> tokens) override;

  std::size_t num_sequences() const { return corpus_.size(); }
  std::size_t num_tokens() const { return num_tokens_; }
  /// Places in the index, those of sequences that left the corpus included.
  std::size_t num_places() const { return places_.size(); }

 private:
  struct entry {
    std::uint64_t serial;       ///< which sequence (its number in arrival order)
    std::vector<token_id> tokens;
  };
  struct place {
    std::uint64_t serial;
    std::uint32_t position;     ///< where the n-gram starts
    std::int32_t older;         ///< the place before it of the same n-gram hash (-1: none)
  };
  struct slot {
    std::uint64_t hash = 0;
    std::int32_t latest = -1;   ///< the latest place of this hash (-1: an empty slot)
  };
  const entry* find(std::uint64_t serial) const;
  /// The places of `e`'s n-grams, added to the index.
  void index(const entry& e);
  /// The n-grams of a sequence of `size` tokens.
  std::size_t num_grams(std::size_t size) const;
  /// The slot of `hash` in the table: its own, or the empty one where it would go.
  slot& slot_of(std::uint64_t hash);
  const slot* find_slot(std::uint64_t hash) const;
  void clear_index();

  suffix_settings settings_;
  std::deque<entry> corpus_;                                  ///< oldest first
  // The index: n-gram hash -> its latest place, each place linked to the one before (an
  // open-addressing table over one array of places: no allocation per n-gram).
  std::vector<slot> table_;
  std::size_t num_used_slots_ = 0;
  std::vector<place> places_;
  std::uint64_t next_serial_ = 0;
  std::size_t num_tokens_ = 0;
  std::size_t num_live_places_ = 0;  ///< of places_, those of sequences in the corpus
};

}  // namespace inflight

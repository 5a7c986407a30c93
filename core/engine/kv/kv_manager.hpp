#pragma once
/// The one owner of KV state: the block pool with its prefix-cache index, every
/// sequence's block table and its chain of block hashes. The scheduler never touches
/// blocks; once per step it sends a kv_request and plans from the kv_grant it gets
/// back (core/engine/kv/kv_grant.hpp). In the engine the kv-allocator actor owns this object;
/// core tests drive it directly.
///
/// Prefix caching: a sequence's full blocks are registered under their hashes once
/// computed (the counts come with its asks and releases), so blocks of prompts and of
/// generated tokens alike. Released cached blocks wait in the pool's LRU free queue; an
/// admission reuses the longest cached prefix of whole blocks, never its last token.

#include <memory>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/base/error.hpp"
#include "core/engine/kv/block_pool.hpp"
#include "core/engine/kv/kv_grant.hpp"

namespace inflight {

class kv_manager {
 public:
  /// `num_draft_blocks` > 0: a second space of that many blocks for the draft model of
  /// speculative decoding (kv_request::draft).
  static result<kv_manager> try_create(int num_blocks, int block_size, int num_draft_blocks = 0);

  /// Applies one step's request: releases, then each ask in order (see kv_request).
  /// A malformed request (an ask twice, a running ask without a table, an admission
  /// that has one, a count below 1) is refused whole, before anything changes.
  result<kv_grant> try_grant(const kv_request& request);
  kv_snapshot snapshot() const;

  const block_pool& pool() const { return pool_; }
  /// The full-block hashes the prefix cache gained and lost since the previous call
  /// (net; see cache_delta): what a router mirrors of this engine's cache.
  cache_delta take_cache_delta() { return pool_.take_cache_delta(); }
  /// Every full-block hash cached now: a mirror's starting point before the next delta.
  std::vector<block_hash> cached_hashes() const { return pool_.cached_hashes(); }
  int num_free_blocks() const { return pool_.num_free_blocks(); }
  bool has_table(seq_id id) const;
  /// Empty when the sequence holds no blocks.
  std::span<const block_id> block_table(seq_id id) const;
  /// Sequences holding blocks.
  int num_sequences() const;
  /// Sequences the manager knows (holding blocks, or waiting with known hashes).
  int num_known_sequences() const { return static_cast<int>(seqs_.size()); }
  /// The pool's invariants, and each block's ref count equals the tables holding it
  /// (the draft space's too).
  result<void> check_invariants() const;
  /// The draft model's space; nullptr when there is none.
  const kv_manager* draft_space() const { return draft_.get(); }

 private:
  /// Working state of one try_grant.
  struct grant_state {
    const kv_request* request = nullptr;
    std::unordered_set<seq_id> granted;
    std::unordered_set<seq_id> preempted;
    std::size_t next_victim = 0;
    kv_grant out;
  };

  /// What the manager keeps per sequence.
  struct seq_blocks {
    std::vector<block_id> table;
    std::vector<block_hash> hashes;  ///< the chain of its full blocks (empty: caching off)
    int num_cached = 0;              ///< leading table blocks registered in the cache or hit
  };

  explicit kv_manager(block_pool pool) : pool_(std::move(pool)) {}
  result<void> check_request(const kv_request& request) const;
  /// try_grant without the draft space.
  kv_grant grant(const kv_request& request);
  kv_granted grant_running(const kv_ask& ask, grant_state& g);
  kv_granted grant_admission(const kv_ask& ask);
  bool try_preempt_victim(seq_id requester, grant_state& g);
  int num_new_blocks(seq_id id, int num_tokens) const;
  /// Gives back the table's blocks past the first num_tokens (never computed ones).
  void trim_table(seq_blocks& s, int num_tokens);
  void cache_computed_blocks(seq_blocks& s, int num_computed_tokens);
  std::vector<block_id> find_cached_prefix(const seq_blocks& s, int max_blocks) const;
  void release(const kv_release& r);
  kv_granted answer(seq_id id, int num_computed, int num_tokens) const;

  block_pool pool_;
  std::unordered_map<seq_id, seq_blocks> seqs_;
  std::unique_ptr<kv_manager> draft_;
};

}  // namespace inflight

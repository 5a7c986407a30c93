#pragma once
/// Paged KV block pool: fixed-size blocks, per-block reference counts, one free queue
/// and the prefix-cache index (block hash -> block). It hands out block ids only; the
/// KV memory itself lives in the backend, laid out as
/// [num_blocks][block_size][kv_heads][head_dim]. Block tables (which blocks a sequence
/// holds) live one level up, in kv_manager.
///
///   seq 7 block table:  [ 3 | 0 | 5 ]       position p lives in block table[p / 16],
///                          |   |   |         slot  table[p / 16] * 16 + p % 16
///   KV memory:  blk0 blk1 blk2 blk3 blk4 blk5 ...
///
/// A full, computed block can carry the hash of its contents (core/engine/kv/block_hash.hpp).
/// When its last holder lets go it keeps the hash and joins the back of the free
/// queue; a prefix-cache hit takes it out again (from anywhere: the queue is a doubly
/// linked list over block ids); it loses the hash only when the pool hands it out for
/// new contents. Blocks without a hash are handed out first:
///
///   front (handed out first)                                    back (kept longest)
///   [ blocks without a hash ] [ cached blocks, least recently used first ]

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/types.hpp"
#include "core/engine/kv/block_hash.hpp"

namespace inflight {

class block_pool {
 public:
  /// A pool of `num_blocks` blocks of `block_size` tokens each (both > 0).
  static result<block_pool> try_create(int num_blocks, int block_size = 16);

  int num_blocks() const { return static_cast<int>(ref_counts_.size()); }
  int block_size() const { return block_size_; }
  /// Blocks in the free queue (cached ones included: they are evicted on demand).
  int num_free_blocks() const { return num_free_; }
  int num_used_blocks() const { return num_blocks() - num_free_blocks(); }
  /// Fraction of blocks in use, 0..1.
  double usage() const;
  /// Blocks needed to hold `num_tokens` tokens.
  int num_blocks_for_tokens(int num_tokens) const;

  /// Appends `n` blocks from the front of the free queue to `out`, each with ref
  /// count 1 and no hash (a cached block handed out is evicted); all or nothing
  /// (out_of_memory when fewer are free).
  result<void> try_allocate(int n, std::vector<block_id>& out);
  /// One more holder of `block`; a free block leaves the free queue (a cache hit).
  void acquire(block_id block);
  /// One holder less; at zero the block joins the free queue: at the back, keeping its
  /// hash, when it has one, else at the front.
  void release(block_id block);

  /// The block holding `hash`, in use or free.
  std::optional<block_id> find_cached(const block_hash& hash) const;
  /// Records that an in-use, full and computed `block` holds `hash`. False, changing
  /// nothing, when another block holds that hash already or this one has a hash.
  bool try_cache(block_id block, const block_hash& hash);
  const block_hash* hash_of(block_id block) const;
  /// Blocks carrying a hash (in use or free).
  int num_cached_blocks() const { return static_cast<int>(index_.size()); }
  /// Cached blocks handed out for new contents since the pool was made.
  std::uint64_t num_evictions() const { return num_evictions_; }
  /// The net change of the cached hashes since the previous call (or since the pool
  /// was made), and starts the next one. Holds at most twice the block count.
  cache_delta take_cache_delta();
  /// Every hash the pool holds now (in use or free), in no particular order.
  std::vector<block_hash> cached_hashes() const;

  int ref_count(block_id block) const;
  bool is_free(block_id block) const { return ref_count(block) == 0; }
  /// Free blocks in the order they will be handed out.
  std::vector<block_id> free_blocks() const;
  /// The free queue holds exactly the blocks with count 0, each once, its links agree
  /// in both directions, the blocks without a hash come first, and the index and the
  /// blocks' hashes agree.
  result<void> check_invariants() const;

 private:
  block_pool(int num_blocks, int block_size);
  void unlink(block_id block);
  void push_front(block_id block);
  void push_back(block_id block);

  result<void> check_index() const;
  void note_cached(const block_hash& hash);
  void note_evicted(const block_hash& hash);

  static constexpr block_id none = -1;
  int block_size_ = 16;
  std::vector<int> ref_counts_;
  std::vector<std::optional<block_hash>> hashes_;
  std::unordered_map<block_hash, block_id, block_hash_hasher> index_;
  std::uint64_t num_evictions_ = 0;
  using hash_set = std::unordered_set<block_hash, block_hash_hasher>;
  hash_set pending_added_, pending_evicted_;  // the net change since take_cache_delta()
  std::vector<block_id> prev_, next_;  // free-queue links, `none` at the ends
  block_id head_ = none, tail_ = none;
  int num_free_ = 0;
};

/// Bytes of K and V one token takes: 2 x layers x kv_heads x head_dim x dtype bytes.
std::int64_t kv_bytes_per_token(int num_layers, int num_kv_heads, int head_dim, int dtype_bytes);

/// How many whole blocks fit in `num_bytes` (clear error when not even one does).
result<int> try_num_blocks_for_bytes(std::int64_t num_bytes, std::int64_t bytes_per_token,
                                     int block_size);

/// KV cache size from the configuration: a block count, or a byte budget when
/// num_blocks is 0. Never per request.
struct kv_cache_config {
  int block_size = 16;
  int num_blocks = 0;           ///< > 0: use exactly this many blocks
  std::int64_t num_bytes = 0;   ///< used when num_blocks == 0
};

/// Resolves a kv_cache_config to a block count for a model shape.
result<int> try_resolve_num_blocks(const kv_cache_config& config, std::int64_t bytes_per_token);

}  // namespace inflight

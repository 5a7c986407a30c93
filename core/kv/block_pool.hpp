#pragma once
/// Paged KV block pool: fixed-size blocks, a free list, per-block reference counts and
/// one block table per sequence. It hands out block ids only; the KV memory itself
/// lives in the backend, laid out as [num_blocks][block_size][kv_heads][head_dim].
///
///   seq 7 block table:  [ 3 | 0 | 5 ]       position p lives in block table[p / 16],
///                          |   |   |         slot  table[p / 16] * 16 + p % 16
///   KV memory:  blk0 blk1 blk2 blk3 blk4 blk5 ...

#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "core/types.hpp"

namespace inflight {

/// Ask that a sequence's block table covers `num_tokens` tokens (positions
/// [0, num_tokens)). Tables only grow; a smaller count is a no-op.
struct reservation {
  seq_id id = 0;
  int num_tokens = 0;
};

/// One step's changes to a pool, in order: releases first, then reservations. The
/// scheduler records them on its own ledger and the kv-allocator replays them on the
/// authoritative pool (see actors/kv_allocator_actor.hpp).
struct kv_ops {
  std::vector<seq_id> releases;
  std::vector<reservation> reservations;
};

class block_pool {
 public:
  /// A pool of `num_blocks` blocks of `block_size` tokens each (both > 0).
  static result<block_pool> try_create(int num_blocks, int block_size = 16);

  int num_blocks() const { return static_cast<int>(ref_counts_.size()); }
  int block_size() const { return block_size_; }
  int num_free_blocks() const { return static_cast<int>(free_list_.size()); }
  int num_used_blocks() const { return num_blocks() - num_free_blocks(); }
  /// Fraction of blocks in use, 0..1.
  double usage() const;
  /// Blocks needed to hold `num_tokens` tokens.
  int num_blocks_for_tokens(int num_tokens) const;
  /// New blocks sequence `id` needs for its table to cover `num_tokens` tokens.
  int num_new_blocks_needed(seq_id id, int num_tokens) const;

  /// All reservations of a step in one call, all-or-nothing: either every table grows
  /// to cover its count, or nothing changes and the error says how many blocks were
  /// missing. A sequence may appear once; unknown sequences get a new table.
  result<void> try_reserve(std::span<const reservation> reservations);
  /// Shares every block of `parent` with a new sequence `child` (ref counts + 1);
  /// for forks and, later, prefix reuse.
  result<void> try_fork(seq_id parent, seq_id child);
  /// Drops a sequence's table; blocks whose count reaches 0 go back to the free list
  /// (tail block first, so a sequence's leading blocks are reused last).
  void release(seq_id id);
  void release(std::span<const seq_id> ids);

  bool has_table(seq_id id) const { return tables_.contains(id); }
  /// Empty when the sequence has no table.
  std::span<const block_id> block_table(seq_id id) const;
  int num_blocks_held(seq_id id) const { return static_cast<int>(block_table(id).size()); }
  int ref_count(block_id block) const;
  int num_sequences() const { return static_cast<int>(tables_.size()); }
  /// Free blocks in the order they will be handed out.
  std::vector<block_id> free_blocks() const { return {free_list_.begin(), free_list_.end()}; }
  /// Checks that each ref count equals the number of tables holding the block and that
  /// the free list holds exactly the blocks with count 0, each once.
  result<void> check_invariants() const;

 private:
  block_pool(int num_blocks, int block_size);

  int block_size_ = 16;
  std::vector<int> ref_counts_;
  std::deque<block_id> free_list_;  // allocate from the front, free to the back
  std::unordered_map<seq_id, std::vector<block_id>> tables_;
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

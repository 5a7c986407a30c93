#pragma once
/// What a router knows of each engine's prefix cache: the hashes of the full KV blocks
/// it holds, kept exact from the engines' own reports (blocks that entered and left
/// their caches), as SGLang's and Dynamo's KV-aware routers keep it. Block hashes chain
/// (core/kv/block_hash.hpp), so a prompt's cached part on an engine is the leading run
/// of its hashes that the engine holds.

#include <cstddef>
#include <span>
#include <unordered_set>
#include <vector>

#include "core/kv/block_hash.hpp"

namespace inflight {

class prefix_index {
 public:
  explicit prefix_index(int num_engines) : blocks_(static_cast<std::size_t>(num_engines)) {}

  int num_engines() const { return static_cast<int>(blocks_.size()); }
  void add(int engine, std::span<const block_hash> hashes);
  void evict(int engine, std::span<const block_hash> hashes);
  /// Forgets all of `engine`'s blocks (it restarted, or went away).
  void clear(int engine);
  /// Leading blocks of `prompt` (its chain of hashes) that `engine` holds.
  int num_cached(int engine, std::span<const block_hash> prompt) const;
  std::size_t num_blocks(int engine) const { return blocks_[static_cast<std::size_t>(engine)].size(); }

 private:
  std::vector<std::unordered_set<block_hash, block_hash_hasher>> blocks_;
};

}  // namespace inflight

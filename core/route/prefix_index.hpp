#pragma once
/// What a router knows of each engine's prefix cache: the hashes of the full KV blocks
/// it holds, kept exact from the engines' own reports (blocks that entered and left
/// their caches), as SGLang's and Dynamo's KV-aware routers keep it. Block hashes chain
/// (core/engine/kv/block_hash.hpp), so a prompt's cached part on an engine is the leading run
/// of its hashes that the engine holds.
///
/// Beside the reported blocks, each engine has the blocks of the prompts routed to it
/// and not finished yet (pending, counted per request): the engine will cache them as it
/// computes them, so requests that share a prefix and arrive together follow the first
/// one instead of spreading before any report came back (SGLang's router keeps such a
/// tree of routed prompts for the same reason).

#include <cstddef>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/engine/kv/block_hash.hpp"

namespace inflight {

class prefix_index {
 public:
  explicit prefix_index(int num_engines)
      : blocks_(static_cast<std::size_t>(num_engines)), pending_(static_cast<std::size_t>(num_engines)) {}

  int num_engines() const { return static_cast<int>(blocks_.size()); }
  void add(int engine, std::span<const block_hash> hashes);
  void evict(int engine, std::span<const block_hash> hashes);
  /// Forgets all of `engine`'s blocks (it restarted, or went away); its pending ones too.
  void clear(int engine);
  /// The blocks of a prompt routed to `engine`, until remove_pending() with the same hashes.
  void add_pending(int engine, std::span<const block_hash> hashes);
  void remove_pending(int engine, std::span<const block_hash> hashes);
  /// Leading blocks of `prompt` (its chain of hashes) that `engine` holds or will hold
  /// (reported or pending).
  int num_cached(int engine, std::span<const block_hash> prompt) const;
  /// Blocks `engine` reported (pending ones not counted).
  std::size_t num_blocks(int engine) const { return blocks_[static_cast<std::size_t>(engine)].size(); }
  /// Distinct pending blocks of `engine`.
  std::size_t num_pending(int engine) const { return pending_[static_cast<std::size_t>(engine)].size(); }

 private:
  std::vector<std::unordered_set<block_hash, block_hash_hasher>> blocks_;
  std::vector<std::unordered_map<block_hash, int, block_hash_hasher>> pending_;  ///< hash -> requests
};

}  // namespace inflight

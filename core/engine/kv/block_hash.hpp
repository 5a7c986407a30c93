#pragma once
/// The identity of a full KV block's contents, for prefix caching (vLLM v1's design):
/// a hash chain over a sequence's full blocks,
///
///   h[0] = H(root,   tokens[0 .. B),   extra)      extra: the request's cache_salt
///   h[k] = H(h[k-1], tokens[kB .. kB+B), "")
///
/// so equal hashes mean equal tokens at equal positions after an equal prefix, under
/// the same salt: the same K/V. H is XXH3-128 (libxxhash): fast enough to vanish next
/// to a forward pass, and at 128 bits an accidental collision is out of reach (about
/// 2^-64 even after 2^32 distinct blocks). It is not a cryptographic hash: someone who
/// can submit chosen prompts could in principle build a block colliding with another
/// tenant's and read back K/V computed for text they never sent. A deployment whose
/// tenants do not trust each other should give each its own cache_salt (blocks under
/// different salts never match); where salts cannot be kept apart, SHA-256 would be the
/// choice (vLLM offers it as an option for the same reason).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/base/types.hpp"

namespace inflight {

struct block_hash {
  std::uint64_t low = 0;
  std::uint64_t high = 0;
  friend bool operator==(const block_hash&, const block_hash&) = default;
};

/// For unordered containers: the low half is already uniformly mixed.
struct block_hash_hasher {
  std::size_t operator()(const block_hash& h) const noexcept { return static_cast<std::size_t>(h.low); }
};

/// How the set of cached block hashes changed between two calls of
/// block_pool::take_cache_delta(): the net change, so `added` and `evicted` never share
/// a hash, and (set before) - evicted + added = (set now). A hash evicted and cached
/// again in between appears in neither.
struct cache_delta {
  std::vector<block_hash> added;
  std::vector<block_hash> evicted;
  bool empty() const { return added.empty() && evicted.empty(); }
};

/// H(parent, tokens, extra); `parent` is null for a sequence's first block.
block_hash hash_block(const block_hash* parent, std::span<const token_id> tokens, std::string_view extra);

/// Appends to `hashes` the hash of every full block of `tokens` (block_size each)
/// that it lacks; `extra` enters the first block only (the chain carries it on).
void extend_block_hashes(std::vector<block_hash>& hashes, std::span<const token_id> tokens, int block_size,
                         std::string_view extra);

}  // namespace inflight

#pragma once
/// How decode attention cuts each sequence's keys into splits (flash-decoding), chosen
/// per step from the step's own contexts and the device's SM count. Plain C++ (no CUDA
/// headers), so the choice is tested on the CPU.
///
/// The grid's split dimension (`grid_splits`) is fixed when a decode graph is captured;
/// the split size is chosen per step and read by the kernels from device memory, so a
/// replayed graph still cuts a 100-token step and an 8,000-token step differently.

#include <algorithm>
#include <cstdint>

namespace inflight::kernels::cuda {

/// Most splits of one sequence (the partials' stride).
inline constexpr int max_decode_splits = 32;
/// Fewest keys in a split, and the granule of split sizes (one key per lane of a warp).
inline constexpr int min_decode_split = 64;
inline constexpr int decode_split_granule = 32;

/// Splits the grid provides for steps of `num_seqs` sequences: enough blocks for about
/// two waves on `num_sms` multiprocessors when each sequence is cut max_decode_splits
/// ways, and at least 4 so that one long sequence among short ones can still be cut.
inline int decode_grid_splits(int num_seqs, int num_kv_heads, int num_sms) {
  const std::int64_t blocks_per_split = std::max<std::int64_t>(1, std::int64_t(num_seqs) * std::max(1, num_kv_heads));
  const std::int64_t want = (2ll * std::max(1, num_sms) + blocks_per_split - 1) / blocks_per_split;
  return int(std::clamp<std::int64_t>(want, 4, max_decode_splits));
}

/// Keys per split for one step: the step's key rows (sum of contexts x kv heads) spread
/// over about two waves of blocks, at least min_decode_split, a multiple of
/// decode_split_granule, and long enough that the longest context needs at most
/// `grid_splits` splits.
inline int decode_split_size(std::int64_t total_context, int max_context, int num_kv_heads, int num_sms,
                             int grid_splits) {
  const std::int64_t rows = std::max<std::int64_t>(1, total_context) * std::max(1, num_kv_heads);
  const std::int64_t target_blocks = 2ll * std::max(1, num_sms);
  std::int64_t size = std::max<std::int64_t>(min_decode_split, (rows + target_blocks - 1) / target_blocks);
  const int g = std::max(1, grid_splits);
  size = std::max<std::int64_t>(size, (std::int64_t(max_context) + g - 1) / g);
  size = (size + decode_split_granule - 1) / decode_split_granule * decode_split_granule;
  return int(std::min<std::int64_t>(size, 1ll << 30));
}

}  // namespace inflight::kernels::cuda

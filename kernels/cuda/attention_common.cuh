#pragma once
// Shared pieces of the two attention kernels: paged addressing and the per-lane
// ownership of output columns (lane owns pairs lane, lane+32, ... of the head).

#include <cmath>

#include "kernels/cuda/device_common.cuh"

namespace inflight::kernels::cuda::detail {

/// Pairs of output columns a lane owns at most (head_dim <= max_head_dim).
inline constexpr int max_pairs_per_lane = max_head_dim / 64;

/// Start of key/value row `key` of sequence `table` (one kv head, head_offset columns in).
template <class T>
__device__ __forceinline__ const T* paged_row(const T* cache, const std::int32_t* table, int key, int block_size,
                                              std::int64_t kv_dim, std::int64_t head_offset) {
  const std::int64_t slot = std::int64_t(table[key / block_size]) * block_size + key % block_size;
  return cache + slot * kv_dim + head_offset;
}

/// acc[i] += p * v for the pairs this lane owns of row `v` (head_dim/2 pairs).
template <class T>
__device__ __forceinline__ void accumulate_row(float (&acc)[2 * max_pairs_per_lane], float p, const pair_t<T>* v,
                                               int num_pairs, int lane) {
#pragma unroll
  for (int i = 0; i < max_pairs_per_lane; ++i) {
    const int pi = lane + 32 * i;
    if (pi < num_pairs) {
      const float2 f = to_float2(v[pi]);
      acc[2 * i] += p * f.x;
      acc[2 * i + 1] += p * f.y;
    }
  }
}

}  // namespace inflight::kernels::cuda::detail

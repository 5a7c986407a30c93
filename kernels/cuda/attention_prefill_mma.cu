// Prefill / mixed-batch attention on tensor cores (mma.sync m16n8k16, bf16 or fp16 in,
// fp32 accumulation), FlashAttention-2 style over the paged cache.
//
// A block takes one tile of up to 16 query tokens of one sequence and one kv head; its
// warps are query heads of that kv head (up to 4 per block, so each K/V tile is read
// from the cache once for the heads it serves). Each warp keeps its 16 x head_dim output
// in mma accumulators and an online softmax per row; the scores of a 64-key tile never
// leave registers: the accumulator fragment of S = Q K^T is the A fragment of P V.
// (Fragment layouts: attention_mma.cuh.)
//
//   shared: K tile [64 keys][head_dim + 8], V tile [64 keys][head_dim + 8] (the 8-element
//   pad spreads a fragment's rows over the banks).
#include "kernels/cuda/attention_mma.cuh"

namespace inflight::kernels::cuda {
namespace {

using detail::mma_op;
using detail::pack;
using detail::pack_halves;

constexpr int tile_keys = 64;
constexpr int max_warps = 4;

template <class T, int HD>
__global__ void __launch_bounds__(32 * max_warps) prefill_mma_kernel(attention_args a, const std::int32_t* tiles,
                                                                      int warps_per_block, int head_groups) {
  constexpr int stride = HD + 8;   // elements per shared row
  constexpr int k_slices = HD / 16;
  constexpr int d_tiles = HD / 8;
  constexpr int chunks = HD / 8;   // 16-byte chunks per cache row
  __shared__ __align__(16) T k_s[tile_keys * stride];
  __shared__ __align__(16) T v_s[tile_keys * stride];

  // The tiles in reverse: a sequence's later tiles attend more keys, so they start first
  // and the short ones fill the tail.
  const int tile = gridDim.x - 1 - blockIdx.x;
  const int seq = tiles[3 * tile], q_begin = tiles[3 * tile + 1], q_end = tiles[3 * tile + 2];
  const int group = a.num_heads / a.num_kv_heads;
  const int kvh = blockIdx.y / head_groups, head_in_group = (blockIdx.y % head_groups) * warps_per_block + threadIdx.x / 32;
  const bool active = head_in_group < group;  // warp-uniform: the last block of a group may have idle warps
  const int h = kvh * group + (active ? head_in_group : 0);
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  // Query rows g and g+8 of the tile: positions (-1: no row) and A fragments.
  const int tok0 = q_begin + g, tok1 = q_begin + g + 8;
  const int pos0 = tok0 < q_end ? a.positions[tok0] : -1;
  const int pos1 = tok1 < q_end ? a.positions[tok1] : -1;
  int key_end = 0;
  for (int qt = q_begin; qt < q_end; ++qt) key_end = max(key_end, a.positions[qt] + 1);

  const T* q = static_cast<const T*>(a.q);
  const T* q0 = q + std::int64_t(tok0) * a.q_stride + std::int64_t(h) * HD;
  const T* q1 = q + std::int64_t(tok1) * a.q_stride + std::int64_t(h) * HD;
  std::uint32_t qa[k_slices][4];
#pragma unroll
  for (int kk = 0; kk < k_slices; ++kk) {
    const int c = kk * 16 + 2 * t;
    qa[kk][0] = pos0 >= 0 ? *reinterpret_cast<const std::uint32_t*>(q0 + c) : 0u;
    qa[kk][1] = pos1 >= 0 ? *reinterpret_cast<const std::uint32_t*>(q1 + c) : 0u;
    qa[kk][2] = pos0 >= 0 ? *reinterpret_cast<const std::uint32_t*>(q0 + c + 8) : 0u;
    qa[kk][3] = pos1 >= 0 ? *reinterpret_cast<const std::uint32_t*>(q1 + c + 8) : 0u;
  }

  float o[d_tiles][4];
#pragma unroll
  for (int nd = 0; nd < d_tiles; ++nd) o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.0f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;  // l: this lane's part of the row sums
  const float scale_log2 = a.scale * 1.4426950408889634f;

  const std::int64_t kv_dim = std::int64_t(a.num_kv_heads) * HD;
  const std::int64_t head_off = std::int64_t(kvh) * HD;
  const std::int32_t* table = a.block_tables + std::int64_t(seq) * a.block_table_stride;
  const T* kc = static_cast<const T*>(a.k_cache);
  const T* vc = static_cast<const T*>(a.v_cache);

  for (int kb = 0; kb < key_end; kb += tile_keys) {
    __syncthreads();  // the previous tile is consumed
    for (int i = threadIdx.x; i < tile_keys * chunks; i += blockDim.x) {
      const int j = i / chunks, c = (i % chunks) * 8, key = kb + j;
      const bool valid = key < key_end;  // past the end: zeros (a V row of NaNs would poison P V)
      const std::int64_t off = valid ? detail::paged_row(kc, table, key, a.block_size, kv_dim, head_off) - kc + c : 0;
      detail::cp_async16(k_s + j * stride + c, kc + off, valid);
      detail::cp_async16(v_s + j * stride + c, vc + off, valid);
    }
    detail::cp_async_wait_all();
    __syncthreads();
    if (!active) continue;

    // S = Q K^T for 64 keys: 8 n-tiles of 8 keys.
    float s[tile_keys / 8][4];
#pragma unroll
    for (int j = 0; j < tile_keys / 8; ++j) {
      s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
      const T* krow = k_s + (j * 8 + g) * stride + 2 * t;
#pragma unroll
      for (int kk = 0; kk < k_slices; ++kk) {
        const std::uint32_t b0 = *reinterpret_cast<const std::uint32_t*>(krow + kk * 16);
        const std::uint32_t b1 = *reinterpret_cast<const std::uint32_t*>(krow + kk * 16 + 8);
        mma_op<T>::run(s[j], qa[kk], b0, b1);
      }
    }
    // Causal mask and scale (log2 domain); row maxima over the quad's lanes.
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int j = 0; j < tile_keys / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = kb + j * 8 + 2 * t + (e & 1);
        const int pos = e < 2 ? pos0 : pos1;
        s[j][e] = key <= pos ? s[j][e] * scale_log2 : -INFINITY;
      }
      mx0 = fmaxf(mx0, fmaxf(s[j][0], s[j][1]));
      mx1 = fmaxf(mx1, fmaxf(s[j][2], s[j][3]));
    }
#pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
    }
    const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
    // A row with no key yet (or no row) keeps max -inf: use 0 so exp2 gives 0, not NaN.
    const float u0 = n0 == -INFINITY ? 0.0f : n0, u1 = n1 == -INFINITY ? 0.0f : n1;
    const float corr0 = exp2f(m0 - u0), corr1 = exp2f(m1 - u1);
    m0 = n0;
    m1 = n1;
    float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
    for (int j = 0; j < tile_keys / 8; ++j) {
      s[j][0] = exp2f(s[j][0] - u0);
      s[j][1] = exp2f(s[j][1] - u0);
      s[j][2] = exp2f(s[j][2] - u1);
      s[j][3] = exp2f(s[j][3] - u1);
      sum0 += s[j][0] + s[j][1];
      sum1 += s[j][2] + s[j][3];
    }
    l0 = l0 * corr0 + sum0;
    l1 = l1 * corr1 + sum1;
#pragma unroll
    for (int nd = 0; nd < d_tiles; ++nd) {
      o[nd][0] *= corr0;
      o[nd][1] *= corr0;
      o[nd][2] *= corr1;
      o[nd][3] *= corr1;
    }
    // O += P V, 16 keys at a time; P's A fragment is two adjacent S accumulators.
#pragma unroll
    for (int ks = 0; ks < tile_keys / 16; ++ks) {
      const std::uint32_t pa[4] = {pack<T>(s[2 * ks][0], s[2 * ks][1]), pack<T>(s[2 * ks][2], s[2 * ks][3]),
                                   pack<T>(s[2 * ks + 1][0], s[2 * ks + 1][1]),
                                   pack<T>(s[2 * ks + 1][2], s[2 * ks + 1][3])};
      const T* v0 = v_s + (ks * 16 + 2 * t) * stride + g;  // keys 2t, 2t+1 (then +8), column g
#pragma unroll
      for (int nd = 0; nd < d_tiles; ++nd) {
        const T* v = v0 + nd * 8;
        const std::uint32_t b0 = pack_halves(v, v + stride);
        const std::uint32_t b1 = pack_halves(v + 8 * stride, v + 9 * stride);
        mma_op<T>::run(o[nd], pa, b0, b1);
      }
    }
  }
  if (!active) return;

#pragma unroll
  for (int off = 1; off < 4; off <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, off);
    l1 += __shfl_xor_sync(0xffffffffu, l1, off);
  }
  T* out = static_cast<T*>(a.out);
  const std::int64_t row_width = std::int64_t(a.num_heads) * HD;
  if (pos0 >= 0) {
    const float inv = 1.0f / l0;
    T* row = out + std::int64_t(tok0) * row_width + std::int64_t(h) * HD + 2 * t;
#pragma unroll
    for (int nd = 0; nd < d_tiles; ++nd) {
      *reinterpret_cast<std::uint32_t*>(row + nd * 8) = pack<T>(o[nd][0] * inv, o[nd][1] * inv);
    }
  }
  if (pos1 >= 0) {
    const float inv = 1.0f / l1;
    T* row = out + std::int64_t(tok1) * row_width + std::int64_t(h) * HD + 2 * t;
#pragma unroll
    for (int nd = 0; nd < d_tiles; ++nd) {
      *reinterpret_cast<std::uint32_t*>(row + nd * 8) = pack<T>(o[nd][2] * inv, o[nd][3] * inv);
    }
  }
}

template <class T, int HD>
void launch(const attention_args& a, const std::int32_t* tiles, int num_tiles, cudaStream_t stream) {
  const int group = a.num_heads / a.num_kv_heads;
  // Warps per block: the largest of 4, 2, 1 dividing the group (none idle), else 4.
  const int warps = group % 4 == 0 ? 4 : group % 2 == 0 ? 2 : group == 1 ? 1 : 4;
  const int head_groups = (group + warps - 1) / warps;
  const dim3 grid(unsigned(num_tiles), unsigned(a.num_kv_heads * head_groups));
  prefill_mma_kernel<T, HD><<<grid, 32 * warps, 0, stream>>>(a, tiles, warps, head_groups);
}

}  // namespace

bool attention_prefill_mma_supports(const attention_args& a) {
  return (a.head_dim == 64 || a.head_dim == 96 || a.head_dim == 128) && a.num_kv_heads > 0 &&
         a.num_heads % a.num_kv_heads == 0 && a.num_heads <= 65535;
}

status attention_prefill_mma(const attention_args& a, const std::int32_t* tiles, int num_tiles, cudaStream_t stream) {
  if (num_tiles <= 0) return status::ok();
  if (!attention_prefill_mma_supports(a)) {
    return status::failure("attention_prefill_mma: unsupported head shape", __FILE__, __LINE__);
  }
  return detail::dispatch(a.dt, [&](auto tag) {
    using T = decltype(tag);
    if (a.head_dim == 64) {
      launch<T, 64>(a, tiles, num_tiles, stream);
    } else if (a.head_dim == 96) {
      launch<T, 96>(a, tiles, num_tiles, stream);
    } else {
      launch<T, 128>(a, tiles, num_tiles, stream);
    }
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

}  // namespace inflight::kernels::cuda

// Decode attention on tensor cores (flash-decoding): one block per (sequence, kv head,
// split). The query heads of the kv head are the rows of one 16-row mma tile (a group of
// up to 16 heads; the rest of the tile is zeros), so each K/V row is read once per group.
// The block reads its split 64 keys at a time into shared memory with 16-byte loads of
// whole rows (every thread, coalesced), and each of its 4 warps takes 16 of those keys:
// S = Q K^T and P V on mma.sync with an online softmax per warp; the warps merge at the
// end into the split's partial (the format of attention_decode's partials, merged by its
// merge kernel).
//
//   shared: K tile [64 keys][head_dim + 8], V tile [64 keys][head_dim + 8]; after the
//   loop, the warps' outputs [4][group][head_dim] fp32 in the same space.
#include "kernels/cuda/attention_mma.cuh"

namespace inflight::kernels::cuda {
namespace {

using detail::mma_op;
using detail::pack;
using detail::pack_halves;

constexpr int tile_keys = 64;
constexpr int warps = 4;
constexpr int warp_keys = tile_keys / warps;  // 16: one k-slice of P V
constexpr float ln2 = 0.6931471805599453f;

template <class T, int HD>
__global__ void __launch_bounds__(32 * warps) decode_mma_kernel(attention_args a, decode_partials part) {
  constexpr int stride = HD + 8;
  constexpr int k_slices = HD / 16;
  constexpr int d_tiles = HD / 8;
  constexpr int chunks = HD / 8;
  constexpr int kv_elems = 2 * tile_keys * stride;
  static_assert(kv_elems * sizeof(T) >= std::size_t(warps) * 16 * HD * sizeof(float), "merge space");
  __shared__ __align__(16) T kv_s[kv_elems];
  __shared__ float m_s[warps][16], l_s[warps][16];
  T* k_s = kv_s;
  T* v_s = kv_s + tile_keys * stride;

  const int row = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z;
  const int s = a.decode_seqs != nullptr ? a.decode_seqs[row] : row;
  const int group = a.num_heads / a.num_kv_heads;
  const int t_idx = a.query_start[s];
  const int split_size = part.split_size_dev != nullptr ? *part.split_size_dev : part.split_size;
  const int begin = split * split_size;
  const int end = min(a.positions[t_idx] + 1, begin + split_size);
  if (begin >= end) return;  // the whole block leaves: the merge reads only used splits

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const int h0 = kvh * group;
  // Rows g and g+8 of the tile are query heads h0+g and h0+g+8 when the group has them.
  const T* q = static_cast<const T*>(a.q) + std::int64_t(t_idx) * a.q_stride + std::int64_t(h0) * HD;
  const bool has0 = g < group, has1 = g + 8 < group;
  std::uint32_t qa[k_slices][4];
#pragma unroll
  for (int kk = 0; kk < k_slices; ++kk) {
    const int c = kk * 16 + 2 * t;
    qa[kk][0] = has0 ? *reinterpret_cast<const std::uint32_t*>(q + g * HD + c) : 0u;
    qa[kk][1] = has1 ? *reinterpret_cast<const std::uint32_t*>(q + (g + 8) * HD + c) : 0u;
    qa[kk][2] = has0 ? *reinterpret_cast<const std::uint32_t*>(q + g * HD + c + 8) : 0u;
    qa[kk][3] = has1 ? *reinterpret_cast<const std::uint32_t*>(q + (g + 8) * HD + c + 8) : 0u;
  }
  float o[d_tiles][4];
#pragma unroll
  for (int nd = 0; nd < d_tiles; ++nd) o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.0f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
  const float scale_log2 = a.scale * 1.4426950408889634f;

  const std::int64_t kv_dim = std::int64_t(a.num_kv_heads) * HD;
  const std::int64_t head_off = std::int64_t(kvh) * HD;
  const std::int32_t* table = a.block_tables + std::int64_t(s) * a.block_table_stride;
  const T* kc = static_cast<const T*>(a.k_cache);
  const T* vc = static_cast<const T*>(a.v_cache);

  for (int kb = begin; kb < end; kb += tile_keys) {
    __syncthreads();
    #pragma unroll
    for (int i = threadIdx.x; i < tile_keys * chunks; i += 32 * warps) {
      const int j = i / chunks, c = (i % chunks) * 8, key = kb + j;
      const bool valid = key < end;  // past the end: zeros (a V row of NaNs would poison P V)
      const std::int64_t off = valid ? detail::paged_row(kc, table, key, a.block_size, kv_dim, head_off) - kc + c : 0;
      detail::cp_async16(k_s + j * stride + c, kc + off, valid);
      detail::cp_async16(v_s + j * stride + c, vc + off, valid);
    }
    detail::cp_async_wait_all();
    __syncthreads();
    const int wk = kb + warp * warp_keys;  // this warp's first key
    if (wk >= end) continue;               // warp-uniform
    float sc[2][4];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      sc[j][0] = sc[j][1] = sc[j][2] = sc[j][3] = 0.0f;
      const T* krow = k_s + (warp * warp_keys + j * 8 + g) * stride + 2 * t;
#pragma unroll
      for (int kk = 0; kk < k_slices; ++kk) {
        const std::uint32_t b0 = *reinterpret_cast<const std::uint32_t*>(krow + kk * 16);
        const std::uint32_t b1 = *reinterpret_cast<const std::uint32_t*>(krow + kk * 16 + 8);
        mma_op<T>::run(sc[j], qa[kk], b0, b1);
      }
    }
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = wk + j * 8 + 2 * t + (e & 1);
        sc[j][e] = key < end ? sc[j][e] * scale_log2 : -INFINITY;
      }
      mx0 = fmaxf(mx0, fmaxf(sc[j][0], sc[j][1]));
      mx1 = fmaxf(mx1, fmaxf(sc[j][2], sc[j][3]));
    }
#pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
    }
    const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);  // finite: key wk < end
    const float corr0 = exp2f(m0 - n0), corr1 = exp2f(m1 - n1);
    m0 = n0;
    m1 = n1;
    float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      sc[j][0] = exp2f(sc[j][0] - n0);
      sc[j][1] = exp2f(sc[j][1] - n0);
      sc[j][2] = exp2f(sc[j][2] - n1);
      sc[j][3] = exp2f(sc[j][3] - n1);
      sum0 += sc[j][0] + sc[j][1];
      sum1 += sc[j][2] + sc[j][3];
    }
    l0 = l0 * corr0 + sum0;
    l1 = l1 * corr1 + sum1;
    const std::uint32_t pa[4] = {pack<T>(sc[0][0], sc[0][1]), pack<T>(sc[0][2], sc[0][3]), pack<T>(sc[1][0], sc[1][1]),
                                 pack<T>(sc[1][2], sc[1][3])};
    const T* v0 = v_s + (warp * warp_keys + 2 * t) * stride + g;
#pragma unroll
    for (int nd = 0; nd < d_tiles; ++nd) {
      o[nd][0] *= corr0;
      o[nd][1] *= corr0;
      o[nd][2] *= corr1;
      o[nd][3] *= corr1;
      const T* v = v0 + nd * 8;
      const std::uint32_t b0 = pack_halves(v, v + stride);
      const std::uint32_t b1 = pack_halves(v + 8 * stride, v + 9 * stride);
      mma_op<T>::run(o[nd], pa, b0, b1);
    }
  }

  // Merge the warps (a warp that saw no key has m = -inf, l = 0, o = 0).
#pragma unroll
  for (int off = 1; off < 4; off <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, off);
    l1 += __shfl_xor_sync(0xffffffffu, l1, off);
  }
  __syncthreads();  // the K/V tiles are free: the warps' outputs go there
  float* o_s = reinterpret_cast<float*>(kv_s);  // [warps][16][HD]
  if (t == 0) {
    m_s[warp][g] = m0;
    l_s[warp][g] = l0;
    m_s[warp][g + 8] = m1;
    l_s[warp][g + 8] = l1;
  }
  const int rows = min(group, 16);
#pragma unroll
  for (int nd = 0; nd < d_tiles; ++nd) {
    const int d = nd * 8 + 2 * t;
    if (has0) {
      o_s[(warp * 16 + g) * HD + d] = o[nd][0];
      o_s[(warp * 16 + g) * HD + d + 1] = o[nd][1];
    }
    if (has1) {
      o_s[(warp * 16 + g + 8) * HD + d] = o[nd][2];
      o_s[(warp * 16 + g + 8) * HD + d + 1] = o[nd][3];
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < rows * HD; i += 32 * warps) {
    const int r = i / HD, d = i % HD;
    float top = m_s[0][r];
#pragma unroll
    for (int w = 1; w < warps; ++w) top = fmaxf(top, m_s[w][r]);  // finite: warp 0 saw key `begin`
    float acc = 0.0f;
#pragma unroll
    for (int w = 0; w < warps; ++w) acc += o_s[(w * 16 + r) * HD + d] * exp2f(m_s[w][r] - top);
    const std::int64_t idx = (std::int64_t(row) * a.num_heads + h0 + r) * part.num_splits + split;
    part.out[idx * HD + d] = acc;
    if (d == 0) {
      float sum = 0.0f;
#pragma unroll
      for (int w = 0; w < warps; ++w) sum += l_s[w][r] * exp2f(m_s[w][r] - top);
      part.max[idx] = top * ln2;  // the merge kernel works in natural-log units
      part.sum[idx] = sum;
    }
  }
}

}  // namespace

bool attention_decode_mma_supports(const attention_args& a) {
  return (a.head_dim == 64 || a.head_dim == 96 || a.head_dim == 128) && a.num_kv_heads > 0 &&
         a.num_heads % a.num_kv_heads == 0 && a.num_heads / a.num_kv_heads <= 16 && a.num_kv_heads <= 65535;
}

status attention_decode_mma_splits(const attention_args& a, const decode_partials& part, cudaStream_t stream) {
  if (!attention_decode_mma_supports(a)) {
    return status::failure("attention_decode (mma): unsupported head shape", __FILE__, __LINE__);
  }
  return detail::dispatch(a.dt, [&](auto tag) {
    using T = decltype(tag);
    const dim3 grid(unsigned(a.num_seqs), unsigned(a.num_kv_heads), unsigned(part.num_splits));
    if (a.head_dim == 64) {
      decode_mma_kernel<T, 64><<<grid, 32 * warps, 0, stream>>>(a, part);
    } else if (a.head_dim == 96) {
      decode_mma_kernel<T, 96><<<grid, 32 * warps, 0, stream>>>(a, part);
    } else {
      decode_mma_kernel<T, 128><<<grid, 32 * warps, 0, stream>>>(a, part);
    }
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

}  // namespace inflight::kernels::cuda

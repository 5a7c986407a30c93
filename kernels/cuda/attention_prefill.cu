// Prefill / mixed-batch attention, FlashAttention-style: a block takes a tile of up to
// 16 query tokens of one sequence and one head, walks the keys 32 at a time through
// shared memory and keeps an online softmax per query row; no score matrix is stored.
//
//   shared:  k tile [32 keys][head_dim/2 + 1 pairs]  (padded: lane = key, no bank conflicts)
//            v tile [32 keys][head_dim/2 pairs]       (lane = output pairs)
//            q tile [16 rows][head_dim/2 pairs]
//   warp w owns query rows 4w .. 4w+3 of the tile; lane j scores key j of the key tile.
#include "kernels/cuda/attention_common.cuh"

namespace inflight::kernels::cuda {
namespace {

constexpr int threads = 128;
constexpr int tile_keys = 32;
constexpr int rows_per_warp = prefill_tile_tokens / (threads / 32);
using detail::max_pairs_per_lane;

std::size_t shared_bytes(int head_dim) {
  const int half = head_dim / 2;
  return std::size_t(tile_keys * (half + 1) + tile_keys * half + prefill_tile_tokens * half) * 4;
}

template <class T>
__global__ void __launch_bounds__(threads) tiled_prefill_kernel(attention_args a, const std::int32_t* tiles) {
  using P = detail::pair_t<T>;
  extern __shared__ __align__(16) unsigned char smem[];
  const int hd = a.head_dim, half = hd / 2;
  P* k_s = reinterpret_cast<P*>(smem);
  P* v_s = k_s + tile_keys * (half + 1);
  P* q_s = v_s + tile_keys * half;
  const int seq = tiles[3 * blockIdx.x], q_begin = tiles[3 * blockIdx.x + 1], q_end = tiles[3 * blockIdx.x + 2];
  const int h = blockIdx.y;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const P zero = detail::from_float2<T>(make_float2(0.0f, 0.0f));

  const T* q = static_cast<const T*>(a.q);
  for (int i = threadIdx.x; i < prefill_tile_tokens * half; i += threads) {
    const int qt = q_begin + i / half;
    q_s[i] = qt < q_end ? reinterpret_cast<const P*>(q + std::int64_t(qt) * a.q_stride + std::int64_t(h) * hd)[i % half]
                        : zero;
  }
  int key_end = 0;
  for (int qt = q_begin; qt < q_end; ++qt) key_end = max(key_end, a.positions[qt] + 1);
  int row_pos[rows_per_warp];
#pragma unroll
  for (int r = 0; r < rows_per_warp; ++r) {
    const int qt = q_begin + warp * rows_per_warp + r;
    row_pos[r] = qt < q_end ? a.positions[qt] : -1;  // -1: no row, skips every key tile
  }

  const std::int64_t kv_dim = std::int64_t(a.num_kv_heads) * hd;
  const std::int64_t head_off = std::int64_t(h / (a.num_heads / a.num_kv_heads)) * hd;
  const std::int32_t* table = a.block_tables + std::int64_t(seq) * a.block_table_stride;
  const T* kc = static_cast<const T*>(a.k_cache);
  const T* vc = static_cast<const T*>(a.v_cache);
  float m[rows_per_warp], l[rows_per_warp], acc[rows_per_warp][2 * max_pairs_per_lane];
#pragma unroll
  for (int r = 0; r < rows_per_warp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int i = 0; i < 2 * max_pairs_per_lane; ++i) acc[r][i] = 0.0f;
  }

  for (int kb = 0; kb < key_end; kb += tile_keys) {
    __syncthreads();  // the previous tile is consumed (and q_s written, first time round)
    for (int i = threadIdx.x; i < tile_keys * half; i += threads) {
      const int j = i / half, pi = i % half, key = kb + j;
      P kp = zero, vp = zero;
      if (key < key_end) {
        kp = reinterpret_cast<const P*>(detail::paged_row(kc, table, key, a.block_size, kv_dim, head_off))[pi];
        vp = reinterpret_cast<const P*>(detail::paged_row(vc, table, key, a.block_size, kv_dim, head_off))[pi];
      }
      k_s[j * (half + 1) + pi] = kp;
      v_s[j * half + pi] = vp;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < rows_per_warp; ++r) {
      if (row_pos[r] < kb) continue;  // warp-uniform: causal range ends before this tile
      const int row = warp * rows_per_warp + r;
      const bool valid = kb + lane <= row_pos[r];
      float score = -INFINITY;
      if (valid) {
        float dot = 0.0f;
        for (int pi = 0; pi < half; ++pi) {
          const float2 qf = detail::to_float2(q_s[row * half + pi]);
          const float2 kf = detail::to_float2(k_s[lane * (half + 1) + pi]);
          dot += qf.x * kf.x + qf.y * kf.y;
        }
        score = dot * a.scale;
      }
      const float m_new = fmaxf(m[r], detail::warp_max(score));  // finite: key kb is valid
      const float corr = __expf(m[r] - m_new);
      const float p = valid ? __expf(score - m_new) : 0.0f;
      l[r] = l[r] * corr + detail::warp_sum(p);
#pragma unroll
      for (int i = 0; i < 2 * max_pairs_per_lane; ++i) acc[r][i] *= corr;
      const int num_keys = min(tile_keys, row_pos[r] - kb + 1);
      for (int j = 0; j < num_keys; ++j) {
        const float pj = __shfl_sync(0xffffffffu, p, j);
        detail::accumulate_row<T>(acc[r], pj, v_s + j * half, half, lane);
      }
      m[r] = m_new;
    }
  }

#pragma unroll
  for (int r = 0; r < rows_per_warp; ++r) {
    const int qt = q_begin + warp * rows_per_warp + r;
    if (qt >= q_end) continue;
    const float inv = 1.0f / l[r];
    P* out = reinterpret_cast<P*>(static_cast<T*>(a.out) + std::int64_t(qt) * a.num_heads * hd + std::int64_t(h) * hd);
#pragma unroll
    for (int i = 0; i < max_pairs_per_lane; ++i) {
      const int pi = lane + 32 * i;
      if (pi < half) out[pi] = detail::from_float2<T>(make_float2(acc[r][2 * i] * inv, acc[r][2 * i + 1] * inv));
    }
  }
}

}  // namespace

status attention_prefill(const attention_args& a, const std::int32_t* tiles, int num_tiles, cudaStream_t stream,
                         prefill_kernel kernel) {
  if (num_tiles <= 0) return status::ok();
  if (kernel == prefill_kernel::mma && attention_prefill_mma_supports(a)) {
    return attention_prefill_mma(a, tiles, num_tiles, stream);
  }
  if (a.head_dim % 2 != 0 || a.head_dim > max_head_dim || a.num_kv_heads <= 0 || a.num_heads % a.num_kv_heads != 0) {
    return status::failure("attention_prefill: unsupported head shape", __FILE__, __LINE__);
  }
  if (a.num_heads > 65535) return status::failure("attention_prefill: too many heads", __FILE__, __LINE__);
  return detail::dispatch(a.dt, [&](auto tag) {
    using T = decltype(tag);
    const dim3 grid(unsigned(num_tiles), unsigned(a.num_heads));
    tiled_prefill_kernel<T><<<grid, threads, shared_bytes(a.head_dim), stream>>>(a, tiles);
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

}  // namespace inflight::kernels::cuda

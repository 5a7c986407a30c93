// Decode attention (flash-decoding): one query token per sequence. Each block reduces
// the keys of one split with an online softmax (warps take 32 keys at a time, one key
// per lane), then merges its warps; a second kernel merges the splits. Splits past a
// sequence's context exit at once, so the grid does not depend on context lengths and
// the launch can live in a CUDA graph.
//
// grouped: grid (sequence, kv head x head chunk, split); the block holds the queries of
// up to 8 heads that share one kv head and reads each K/V row once for all of them.
// per_head: grid (sequence, query head, split); each query head reads the rows again.
#include "kernels/cuda/attention_common.cuh"

namespace inflight::kernels::cuda {
namespace {

constexpr int threads = 128;
constexpr int num_warps = threads / 32;
using detail::max_pairs_per_lane;

__device__ __forceinline__ int split_size_of(const decode_partials& part) {
  return part.split_size_dev != nullptr ? *part.split_size_dev : part.split_size;
}

/// q_s (fp32, already scaled) . k over head_dim.
template <class T>
__device__ float dot_q(const float* q_s, const T* k, int head_dim) {
  using P = detail::pair_t<T>;
  float acc = 0.0f;
  if ((head_dim & 7) == 0) {  // 16-byte loads: 4 pairs at a time
    const uint4* k4 = reinterpret_cast<const uint4*>(k);
    for (int c = 0; c < head_dim / 8; ++c) {
      const uint4 u = k4[c];
      const P* pairs = reinterpret_cast<const P*>(&u);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 f = detail::to_float2(pairs[e]);
        acc += q_s[8 * c + 2 * e] * f.x + q_s[8 * c + 2 * e + 1] * f.y;
      }
    }
    return acc;
  }
  const P* k2 = reinterpret_cast<const P*>(k);
  for (int p = 0; p < head_dim / 2; ++p) {
    const float2 f = detail::to_float2(k2[p]);
    acc += q_s[2 * p] * f.x + q_s[2 * p + 1] * f.y;
  }
  return acc;
}

template <class T>
__global__ void __launch_bounds__(threads) decode_split_kernel(attention_args a, decode_partials part) {
  using P = detail::pair_t<T>;
  __shared__ __align__(16) float q_s[max_head_dim];
  __shared__ float acc_s[num_warps][max_head_dim];
  __shared__ float max_s[num_warps], sum_s[num_warps];
  const int row = blockIdx.x, h = blockIdx.y, split = blockIdx.z;
  const int s = a.decode_seqs != nullptr ? a.decode_seqs[row] : row;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int hd = a.head_dim, num_pairs = hd / 2;
  const int t = a.query_start[s];
  const int split_size = split_size_of(part);
  const int begin = split * split_size;
  const int end = min(a.positions[t] + 1, begin + split_size);
  if (begin >= end) return;  // the whole block leaves: nothing of this split is read later

  const T* q = static_cast<const T*>(a.q) + std::int64_t(t) * a.q_stride + std::int64_t(h) * hd;
  for (int d = threadIdx.x; d < hd; d += threads) q_s[d] = detail::to_float(q[d]) * a.scale;
  __syncthreads();

  const std::int64_t kv_dim = std::int64_t(a.num_kv_heads) * hd;
  const std::int64_t head_off = std::int64_t(h / (a.num_heads / a.num_kv_heads)) * hd;
  const std::int32_t* table = a.block_tables + std::int64_t(s) * a.block_table_stride;
  const T* kc = static_cast<const T*>(a.k_cache);
  const T* vc = static_cast<const T*>(a.v_cache);
  float m = -INFINITY, l = 0.0f;
  float acc[2 * max_pairs_per_lane] = {};
  for (int base = begin + warp * 32; base < end; base += threads) {
    const int key = base + lane;
    float score = -INFINITY;
    if (key < end) score = dot_q(q_s, detail::paged_row(kc, table, key, a.block_size, kv_dim, head_off), hd);
    const float m_new = fmaxf(m, detail::warp_max(score));  // finite: key `base` is valid
    const float corr = __expf(m - m_new);
    const float p = key < end ? __expf(score - m_new) : 0.0f;
    l = l * corr + detail::warp_sum(p);
#pragma unroll
    for (int i = 0; i < 2 * max_pairs_per_lane; ++i) acc[i] *= corr;
    const int num_keys = min(32, end - base);
    for (int j = 0; j < num_keys; ++j) {
      const float pj = __shfl_sync(0xffffffffu, p, j);
      const T* v = detail::paged_row(vc, table, base + j, a.block_size, kv_dim, head_off);
      detail::accumulate_row<T>(acc, pj, reinterpret_cast<const P*>(v), num_pairs, lane);
    }
    m = m_new;
  }

  // Merge the warps (a warp without keys has m = -inf, l = 0, acc = 0).
  if (lane == 0) {
    max_s[warp] = m;
    sum_s[warp] = l;
  }
#pragma unroll
  for (int i = 0; i < max_pairs_per_lane; ++i) {
    const int pi = lane + 32 * i;
    if (pi < num_pairs) {
      acc_s[warp][2 * pi] = acc[2 * i];
      acc_s[warp][2 * pi + 1] = acc[2 * i + 1];
    }
  }
  __syncthreads();
  float block_max = max_s[0];
  for (int w = 1; w < num_warps; ++w) block_max = fmaxf(block_max, max_s[w]);
  float weight[num_warps];
  float block_sum = 0.0f;
#pragma unroll
  for (int w = 0; w < num_warps; ++w) {
    weight[w] = __expf(max_s[w] - block_max);
    block_sum += sum_s[w] * weight[w];
  }
  const std::int64_t idx = (std::int64_t(row) * a.num_heads + h) * part.num_splits + split;
  for (int d = threadIdx.x; d < hd; d += threads) {
    float o = 0.0f;
#pragma unroll
    for (int w = 0; w < num_warps; ++w) o += acc_s[w][d] * weight[w];
    part.out[idx * hd + d] = o;
  }
  if (threadIdx.x == 0) {
    part.max[idx] = block_max;
    part.sum[idx] = block_sum;
  }
}

/// Query heads a grouped block holds at most; larger groups take several blocks.
constexpr int max_group_block = 8;

/// Grouped decode: GMAX >= heads of this block (g), PPL >= head_dim / 64.
template <class T, int PPL, int GMAX>
__global__ void __launch_bounds__(threads) decode_grouped_kernel(attention_args a, decode_partials part,
                                                                 int head_chunks) {
  using P = detail::pair_t<T>;
  constexpr int max_hd = 64 * PPL;
  __shared__ __align__(16) float q_s[GMAX][max_hd];
  __shared__ float acc_s[num_warps][GMAX][max_hd];
  __shared__ float max_s[num_warps][GMAX], sum_s[num_warps][GMAX];
  const int row = blockIdx.x, split = blockIdx.z;
  const int s = a.decode_seqs != nullptr ? a.decode_seqs[row] : row;
  const int kvh = blockIdx.y / head_chunks, chunk = blockIdx.y % head_chunks;
  const int group = a.num_heads / a.num_kv_heads;
  const int h0 = kvh * group + chunk * GMAX;
  const int g = min(GMAX, group - chunk * GMAX);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int hd = a.head_dim, num_pairs = hd / 2;
  const int t = a.query_start[s];
  const int split_size = split_size_of(part);
  const int begin = split * split_size;
  const int end = min(a.positions[t] + 1, begin + split_size);
  if (begin >= end) return;

  const T* q = static_cast<const T*>(a.q) + std::int64_t(t) * a.q_stride + std::int64_t(h0) * hd;
  for (int i = threadIdx.x; i < g * hd; i += threads) q_s[i / hd][i % hd] = detail::to_float(q[i]) * a.scale;
  __syncthreads();

  const std::int64_t kv_dim = std::int64_t(a.num_kv_heads) * hd;
  const std::int64_t head_off = std::int64_t(kvh) * hd;
  const std::int32_t* table = a.block_tables + std::int64_t(s) * a.block_table_stride;
  const T* kc = static_cast<const T*>(a.k_cache);
  const T* vc = static_cast<const T*>(a.v_cache);
  float m[GMAX], l[GMAX], acc[GMAX][2 * PPL];
#pragma unroll
  for (int gi = 0; gi < GMAX; ++gi) {
    m[gi] = -INFINITY;
    l[gi] = 0.0f;
#pragma unroll
    for (int i = 0; i < 2 * PPL; ++i) acc[gi][i] = 0.0f;
  }
  for (int base = begin + warp * 32; base < end; base += threads) {
    const int key = base + lane;
    const bool valid = key < end;
    float sc[GMAX];
#pragma unroll
    for (int gi = 0; gi < GMAX; ++gi) sc[gi] = 0.0f;
    if (valid) {
      const T* k = detail::paged_row(kc, table, key, a.block_size, kv_dim, head_off);
      if ((hd & 7) == 0) {  // 16-byte loads: 8 values at a time
        const uint4* k4 = reinterpret_cast<const uint4*>(k);
        for (int c = 0; c < hd / 8; ++c) {
          const uint4 u = k4[c];
          const P* pairs = reinterpret_cast<const P*>(&u);
          float f[8];
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float2 v2 = detail::to_float2(pairs[e]);
            f[2 * e] = v2.x;
            f[2 * e + 1] = v2.y;
          }
#pragma unroll
          for (int gi = 0; gi < GMAX; ++gi) {
            if (gi < g) {
              const float4 qa = *reinterpret_cast<const float4*>(&q_s[gi][8 * c]);
              const float4 qb = *reinterpret_cast<const float4*>(&q_s[gi][8 * c + 4]);
              sc[gi] += qa.x * f[0] + qa.y * f[1] + qa.z * f[2] + qa.w * f[3] + qb.x * f[4] + qb.y * f[5] +
                        qb.z * f[6] + qb.w * f[7];
            }
          }
        }
      } else {
        const P* k2 = reinterpret_cast<const P*>(k);
        for (int p = 0; p < num_pairs; ++p) {
          const float2 f = detail::to_float2(k2[p]);
#pragma unroll
          for (int gi = 0; gi < GMAX; ++gi) {
            if (gi < g) sc[gi] += q_s[gi][2 * p] * f.x + q_s[gi][2 * p + 1] * f.y;
          }
        }
      }
    }
    float p[GMAX];
#pragma unroll
    for (int gi = 0; gi < GMAX; ++gi) {
      p[gi] = 0.0f;
      if (gi < g) {  // g is uniform over the block: the shuffles see every lane
        const float score = valid ? sc[gi] : -INFINITY;
        const float m_new = fmaxf(m[gi], detail::warp_max(score));  // finite: key `base` is valid
        const float corr = __expf(m[gi] - m_new);
        p[gi] = valid ? __expf(score - m_new) : 0.0f;
        l[gi] = l[gi] * corr + detail::warp_sum(p[gi]);
#pragma unroll
        for (int i = 0; i < 2 * PPL; ++i) acc[gi][i] *= corr;
        m[gi] = m_new;
      }
    }
    const int num_keys = min(32, end - base);
    for (int j = 0; j < num_keys; ++j) {
      const P* v = reinterpret_cast<const P*>(detail::paged_row(vc, table, base + j, a.block_size, kv_dim, head_off));
      float2 vf[PPL];
#pragma unroll
      for (int i = 0; i < PPL; ++i) {
        const int pi = lane + 32 * i;
        vf[i] = pi < num_pairs ? detail::to_float2(v[pi]) : make_float2(0.0f, 0.0f);
      }
#pragma unroll
      for (int gi = 0; gi < GMAX; ++gi) {
        if (gi < g) {
          const float pj = __shfl_sync(0xffffffffu, p[gi], j);
#pragma unroll
          for (int i = 0; i < PPL; ++i) {
            acc[gi][2 * i] += pj * vf[i].x;
            acc[gi][2 * i + 1] += pj * vf[i].y;
          }
        }
      }
    }
  }

  // Merge the warps (a warp without keys has m = -inf, l = 0, acc = 0).
#pragma unroll
  for (int gi = 0; gi < GMAX; ++gi) {
    if (gi < g) {
      if (lane == 0) {
        max_s[warp][gi] = m[gi];
        sum_s[warp][gi] = l[gi];
      }
#pragma unroll
      for (int i = 0; i < PPL; ++i) {
        const int pi = lane + 32 * i;
        if (pi < num_pairs) {
          acc_s[warp][gi][2 * pi] = acc[gi][2 * i];
          acc_s[warp][gi][2 * pi + 1] = acc[gi][2 * i + 1];
        }
      }
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < g * hd; i += threads) {
    const int gi = i / hd, d = i % hd;
    float block_max = max_s[0][gi];
#pragma unroll
    for (int w = 1; w < num_warps; ++w) block_max = fmaxf(block_max, max_s[w][gi]);
    float o = 0.0f;
#pragma unroll
    for (int w = 0; w < num_warps; ++w) o += acc_s[w][gi][d] * __expf(max_s[w][gi] - block_max);
    const std::int64_t idx = (std::int64_t(row) * a.num_heads + h0 + gi) * part.num_splits + split;
    part.out[idx * hd + d] = o;
    if (d == 0) {
      float block_sum = 0.0f;
#pragma unroll
      for (int w = 0; w < num_warps; ++w) block_sum += sum_s[w][gi] * __expf(max_s[w][gi] - block_max);
      part.max[idx] = block_max;
      part.sum[idx] = block_sum;
    }
  }
}

template <class T>
__global__ void __launch_bounds__(threads) decode_merge_kernel(attention_args a, decode_partials part) {
  const int row = blockIdx.x, h = blockIdx.y, hd = a.head_dim;
  const int s = a.decode_seqs != nullptr ? a.decode_seqs[row] : row;
  const int t = a.query_start[s];
  const int ctx = a.positions[t] + 1;
  const int split_size = split_size_of(part);
  const int num_used = min(part.num_splits, (ctx + split_size - 1) / split_size);
  const std::int64_t idx0 = (std::int64_t(row) * a.num_heads + h) * part.num_splits;
  float top = -INFINITY;
  for (int i = 0; i < num_used; ++i) top = fmaxf(top, part.max[idx0 + i]);
  float total = 0.0f;
  for (int i = 0; i < num_used; ++i) total += part.sum[idx0 + i] * __expf(part.max[idx0 + i] - top);
  const float inv_total = 1.0f / total;
  T* out = static_cast<T*>(a.out) + std::int64_t(t) * a.num_heads * hd + std::int64_t(h) * hd;
  for (int d = threadIdx.x; d < hd; d += threads) {
    float o = 0.0f;
    for (int i = 0; i < num_used; ++i) o += part.out[(idx0 + i) * hd + d] * __expf(part.max[idx0 + i] - top);
    out[d] = detail::from_float<T>(o * inv_total);
  }
}

}  // namespace

std::int64_t decode_partials_floats(int num_seqs, int num_heads, int head_dim, int num_splits) {
  return std::int64_t(num_seqs) * num_heads * num_splits * (head_dim + 2);
}

namespace {

template <class T, int PPL, int GMAX>
void launch_grouped(const attention_args& a, const decode_partials& part, cudaStream_t stream) {
  const int group = a.num_heads / a.num_kv_heads;
  const int chunks = (group + GMAX - 1) / GMAX;
  const dim3 grid(unsigned(a.num_seqs), unsigned(a.num_kv_heads * chunks), unsigned(part.num_splits));
  decode_grouped_kernel<T, PPL, GMAX><<<grid, threads, 0, stream>>>(a, part, chunks);
}

template <class T, int PPL>
void launch_grouped_for_group(const attention_args& a, const decode_partials& part, cudaStream_t stream) {
  const int group = a.num_heads / a.num_kv_heads;
  if (group <= 1) return launch_grouped<T, PPL, 1>(a, part, stream);
  if (group <= 2) return launch_grouped<T, PPL, 2>(a, part, stream);
  if (group <= 4) return launch_grouped<T, PPL, 4>(a, part, stream);
  launch_grouped<T, PPL, max_group_block>(a, part, stream);
}

}  // namespace

status attention_decode(const attention_args& a, const decode_partials& part, cudaStream_t stream,
                        decode_kernel kernel) {
  if (a.num_seqs <= 0) return status::ok();
  if (a.head_dim % 2 != 0 || a.head_dim > max_head_dim || a.num_kv_heads <= 0 || a.num_heads % a.num_kv_heads != 0) {
    return status::failure("attention_decode: unsupported head shape", __FILE__, __LINE__);
  }
  if (part.num_splits <= 0 || (part.split_size_dev == nullptr && part.split_size <= 0) || a.num_heads > 65535 ||
      part.num_splits > 65535) {
    return status::failure("attention_decode: bad split configuration", __FILE__, __LINE__);
  }
  return detail::dispatch(a.dt, [&](auto tag) {
    using T = decltype(tag);
    if (kernel == decode_kernel::mma && attention_decode_mma_supports(a)) {
      INFLIGHT_TRY_STATUS(attention_decode_mma_splits(a, part, stream));
    } else if (kernel != decode_kernel::per_head) {
      if (a.head_dim <= 64) {
        launch_grouped_for_group<T, 1>(a, part, stream);
      } else if (a.head_dim <= 128) {
        launch_grouped_for_group<T, 2>(a, part, stream);
      } else {
        launch_grouped_for_group<T, 4>(a, part, stream);
      }
    } else {
      const dim3 grid(unsigned(a.num_seqs), unsigned(a.num_heads), unsigned(part.num_splits));
      decode_split_kernel<T><<<grid, threads, 0, stream>>>(a, part);
    }
    INFLIGHT_CUDA_CHECK_LAUNCH();
    decode_merge_kernel<T><<<dim3(unsigned(a.num_seqs), unsigned(a.num_heads)), threads, 0, stream>>>(a, part);
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

}  // namespace inflight::kernels::cuda

#pragma once
// Paged causal attention of one query head, a template over the vector traits of
// simd_avx2.hpp / simd_avx512.hpp; included only by the files compiled for those
// instruction sets (internal linkage throughout).
#include "kernels/cpu/cpu_isa.hpp"

namespace inflight::kernels::cpu {
namespace {

/// Four dot products of q with key rows (missing keys repeat the last).
template <class V>
__m128 attention_dot4(const float* q, const float* const* keys, int head_dim) {
  typename V::vf acc[4] = {V::zero(), V::zero(), V::zero(), V::zero()};
  int i = 0;
  for (; i + V::width <= head_dim; i += V::width) {
    const auto qv = V::load(q + i);
    for (int j = 0; j < 4; ++j) acc[j] = V::fmadd(qv, V::load(keys[j] + i), acc[j]);
  }
  if (i < head_dim) {
    const auto m = V::first_lanes(head_dim - i);
    const auto qv = V::maskz_load(m, q + i);
    for (int j = 0; j < 4; ++j) acc[j] = V::fmadd(qv, V::maskz_load(m, keys[j] + i), acc[j]);
  }
  return V::reduce4(acc[0], acc[1], acc[2], acc[3]);
}

/// Row 0 of the block holding key position `first` (a multiple of the block size).
inline const float* attention_block_rows(const attention_args& a, const std::byte* cache, int first) {
  const std::int64_t block = a.block_table[first / a.block_size];
  return reinterpret_cast<const float*>(cache) + block * a.block_size * a.kv_dim + a.head_offset;
}

/// scores[p] = exp(q.k_p * scale - max) for p < num_keys; returns their sum.
template <class V>
float attention_numerators(const attention_args& a, const float* q, int num_keys) {
  for (int first = 0; first < num_keys; first += a.block_size) {
    const float* rows = attention_block_rows(a, a.k_cache, first);
    const int in_block = num_keys - first < a.block_size ? num_keys - first : a.block_size;
    for (int j = 0; j < in_block; j += 4) {
      const int count = in_block - j < 4 ? in_block - j : 4;
      const float* keys[4];
      for (int i = 0; i < 4; ++i) keys[i] = rows + (j + (i < count ? i : count - 1)) * a.kv_dim;
      V::store4(a.scores + first + j, count, _mm_mul_ps(attention_dot4<V>(q, keys, a.head_dim), _mm_set1_ps(a.scale)));
    }
  }
  auto vmax = V::set1(-3.0e38f);
  for (int p = 0; p < num_keys; p += V::width) {
    const auto m = V::first_lanes(num_keys - p);
    vmax = V::max(vmax, V::maskz_load(m, a.scores + p));
  }
  const auto max_score = V::set1(V::reduce_max(vmax));
  auto sum = V::zero();
  for (int p = 0; p < num_keys; p += V::width) {
    const auto m = V::first_lanes(num_keys - p);
    const auto e = V::and_mask(V::exp(V::sub(V::maskz_load(m, a.scores + p), max_score)), m);
    V::mask_store(a.scores + p, m, e);
    sum = V::add(sum, e);
  }
  return V::reduce(sum);
}

template <class V>
void attention_one(const attention_args& a, const float* q, int num_keys, float* out) {
  const auto inv_sum = V::set1(1.0f / attention_numerators<V>(a, q, num_keys));
  for (int c = 0; c < a.head_dim; c += 4 * V::width) {
    typename V::mask m[4];
    bool active[4];
    typename V::vf acc[4];
    for (int j = 0; j < 4; ++j) {
      active[j] = a.head_dim - c - j * V::width > 0;
      m[j] = V::first_lanes(a.head_dim - c - j * V::width);
      acc[j] = V::zero();
    }
    for (int first = 0; first < num_keys; first += a.block_size) {
      const float* rows = attention_block_rows(a, a.v_cache, first) + c;
      const int in_block = num_keys - first < a.block_size ? num_keys - first : a.block_size;
      for (int p = 0; p < in_block; ++p) {
        const float* v = rows + p * a.kv_dim;
        const auto weight = V::mul(V::set1(a.scores[first + p]), inv_sum);
        for (int j = 0; j < 4; ++j) {
          if (active[j]) acc[j] = V::fmadd(weight, V::maskz_load(m[j], v + j * V::width), acc[j]);
        }
      }
    }
    for (int j = 0; j < 4; ++j) {
      if (active[j]) V::mask_store(out + c + j * V::width, m[j], acc[j]);
    }
  }
}

template <class V>
void attention(const attention_args& a) {
  for (int i = 0; i < a.num_queries; ++i) attention_one<V>(a, a.q + i * a.q_stride, a.num_keys + i, a.out + i * a.out_stride);
}

}  // namespace
}  // namespace inflight::kernels::cpu

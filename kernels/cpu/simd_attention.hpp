#pragma once
// Paged causal attention of one query head over f32, f16 or bf16 keys and values, a
// template over the vector traits; included only by the files compiled for their
// instruction set (internal linkage throughout).
//
// Per query: scores s_p = (q . k_p) * scale for every key it reads (all before it, or
// the last `window`), soft-capped when asked, their max, e_p = exp(s_p - max) and their
// sum, then out = sum_p (e_p / sum) v_p in key order. Up to `tile` consecutive queries
// of a sequence run together, sharing each key and value row they load; every query's
// operations are those it runs alone, so its bits do not depend on the other queries of
// the call.
#include <cmath>

#include "kernels/cpu/cpu_isa.hpp"

namespace inflight::kernels::cpu {
namespace {

/// Loads of one KV element type as floats.
template <class V, kv_type T>
struct kv_loads {
  static typename V::vf load(const std::byte* p) {
    if constexpr (T == kv_type::f32) return V::load(reinterpret_cast<const float*>(p));
    if constexpr (T == kv_type::f16) return V::load_f16(p);
    if constexpr (T == kv_type::bf16) return V::load_bf16(p);
  }
  /// The first `count` elements, zeros after.
  static typename V::vf load_part(const std::byte* p, int count) {
    if constexpr (T == kv_type::f32) return V::maskz_load(V::first_lanes(count), reinterpret_cast<const float*>(p));
    alignas(64) std::uint16_t tmp[V::width] = {};
    __builtin_memcpy(tmp, p, std::size_t(count) * 2);
    return load(reinterpret_cast<const std::byte*>(tmp));
  }
  static typename V::vf load_any(const std::byte* p, int count) { return count >= V::width ? load(p) : load_part(p, count); }
};

template <class V, kv_type T>
struct attention_kernel {
  using vf = typename V::vf;
  using L = kv_loads<V, T>;
  static constexpr int tile = V::width == 16 ? 4 : 2;
  static constexpr std::int64_t el = T == kv_type::f32 ? 4 : 2;

  const attention_args& a;

  /// Row 0 of the block holding key position p, and the stride of rows (a head's rows
  /// are contiguous, and so are its blocks in block order).
  const std::byte* block_base(const std::byte* cache, int p) const {
    return cache + std::int64_t(a.block_table[p / a.block_size]) * a.block_size * a.head_dim * el;
  }
  std::int64_t row_stride() const { return std::int64_t(a.head_dim) * el; }

  /// Scores of keys [first, first + count) (count <= 4, in the block whose row of `first`
  /// is at `row`) for queries [0, nq): scores[j][p]. Missing keys repeat the last (their
  /// lanes are not stored).
  template <int nq>
  void scores4(const float* const* q, float* const* scores, const std::byte* row, int first, int count) const {
    const std::byte* keys[4];
    for (int i = 0; i < 4; ++i) keys[i] = row + (i < count ? i : count - 1) * row_stride();
    vf acc[nq][4];
    for (int j = 0; j < nq; ++j) {
      for (int i = 0; i < 4; ++i) acc[j][i] = V::zero();
    }
    for (int d = 0; d < a.head_dim; d += V::width) {
      const int part = a.head_dim - d;
      vf kv[4];
      for (int i = 0; i < 4; ++i) kv[i] = L::load_any(keys[i] + d * el, part);
      for (int j = 0; j < nq; ++j) {
        const vf qv = part >= V::width ? V::load(q[j] + d) : V::maskz_load(V::first_lanes(part), q[j] + d);
        for (int i = 0; i < 4; ++i) acc[j][i] = V::fmadd(qv, kv[i], acc[j][i]);
      }
    }
    for (int j = 0; j < nq; ++j) {
      V::store4(scores[j] + first, count, _mm_mul_ps(V::reduce4(acc[j][0], acc[j][1], acc[j][2], acc[j][3]), _mm_set1_ps(a.scale)));
    }
  }

  /// Scores of keys [begin, end) for queries [0, nq), in groups of 4 within each block.
  template <int nq>
  void scores(const float* const* q, float* const* s, int begin, int end) const {
    for (int p = begin; p < end;) {
      const int block_start = p / a.block_size * a.block_size, block_end = block_start + a.block_size;
      const int stop = end < block_end ? end : block_end;
      const std::byte* base = block_base(a.k_cache, p);
      while (p < stop) {
        const int count = stop - p < 4 ? stop - p : 4;
        prefetch_rows(a.k_cache, p + prefetch_keys, count);
        scores4<nq>(q, s, base + (p - block_start) * row_stride(), p, count);
        p += count;
      }
    }
  }

  /// s[p] = c tanh(s[p] / c) for p < n: soft-capping, tanh(y) as 1 - 2 / (exp(2y) + 1).
  static void softcap(float* s, int n, float c) {
    const auto cap = V::set1(c), two_over_cap = V::set1(2.0f / c), one = V::set1(1.0f), two = V::set1(2.0f);
    for (int p = 0; p < n; p += V::width) {
      const auto m = V::first_lanes(n - p);
      const auto e = V::exp(V::mul(V::maskz_load(m, s + p), two_over_cap));
      V::mask_store(s + p, m, V::mul(cap, V::sub(one, V::div(two, V::add(e, one)))));
    }
  }

  /// s[p] = exp(s[p] - max) / sum for p < n: the weights of the values; a sink logit
  /// (-inf: none) joins the max and the sum. (The product e_p * (1 / sum) is the one the
  /// values' loop used to form: the same bits.)
  static void softmax_weights(float* s, int n, float sink) {
    auto vmax = V::set1(-3.0e38f);
    for (int p = 0; p < n; p += V::width) vmax = V::max(vmax, V::mask_load(V::first_lanes(n - p), s + p, -3.0e38f));
    const float top = V::reduce_max(vmax);
    const float m = sink > top ? sink : top;
    const auto max_score = V::set1(m);
    auto sum = V::zero();
    for (int p = 0; p < n; p += V::width) {
      const auto m = V::first_lanes(n - p);
      const auto e = V::and_mask(V::exp(V::sub(V::maskz_load(m, s + p), max_score)), m);
      V::mask_store(s + p, m, e);
      sum = V::add(sum, e);
    }
    float total = V::reduce(sum);
    if (sink > -3.0e38f) total += std::exp(sink - m);
    const auto inv_sum = V::set1(1.0f / total);
    for (int p = 0; p < n; p += V::width) {
      const auto m = V::first_lanes(n - p);
      V::mask_store(s + p, m, V::mul(V::maskz_load(m, s + p), inv_sum));
    }
  }

  /// Keys read ahead: about the latency of memory at this kernel's pace.
  static constexpr int prefetch_keys = 32;

  /// The rows of the first prefetch_keys keys from `first`.
  void prefetch_first(const std::byte* cache, int first) const {
    for (int p = first; p < first + prefetch_keys; p += a.block_size) prefetch_rows(cache, p, a.block_size);
  }

  /// Rows [p, p + count) of a cache's block holding p, asked for ahead of their use.
  void prefetch_rows(const std::byte* cache, int p, int count) const {
    if (p >= a.num_keys + a.num_queries - 1) return;  // no such key: its block may not exist
    if (count > a.block_size - p % a.block_size) count = a.block_size - p % a.block_size;
    const std::byte* row = block_base(cache, p) + std::int64_t(p % a.block_size) * row_stride();
    for (int i = 0; i < count; ++i, row += row_stride()) {
      for (std::int64_t x = 0; x < a.head_dim * el; x += 64) _mm_prefetch(reinterpret_cast<const char*>(row + x), _MM_HINT_T0);
    }
  }

  /// acc[j][0..R) (+ a partial register when `partial` > 0) += w[j][p] * v_p over dims
  /// from c, for keys [begin, end) in order and queries [0, nq).
  template <int nq, int R>
  void values_regs(float* const* w, int c, int partial, int begin, int end, vf (*acc)[4]) const {
    const std::byte* v = nullptr;
    for (int p = begin, in_block = 0; p < end; ++p, ++in_block, v += row_stride()) {
      if (p == begin || in_block == a.block_size) {
        in_block = p % a.block_size;
        v = block_base(a.v_cache, p) + in_block * row_stride() + c * el;
      }
      if (in_block % 4 == 0) prefetch_rows(a.v_cache, p + prefetch_keys, 4);
      vf vv[4];
      for (int i = 0; i < R; ++i) vv[i] = L::load(v + i * V::width * el);
      if (partial > 0) vv[R] = L::load_part(v + R * V::width * el, partial);
      for (int j = 0; j < nq; ++j) {
        const vf weight = V::set1(w[j][p]);
        for (int i = 0; i < R; ++i) acc[j][i] = V::fmadd(weight, vv[i], acc[j][i]);
        if (partial > 0) acc[j][R] = V::fmadd(weight, vv[R], acc[j][R]);
      }
    }
  }

  /// out[j] over dims [c, c + 4 width) += weight * v for keys [begin, end) and queries [0, nq).
  template <int nq>
  void values(float* const* w, int c, int begin, int end, vf (*acc)[4]) const {
    const int left = a.head_dim - c, full = left / V::width < 4 ? left / V::width : 4;
    const int partial = full < 4 ? left - full * V::width : 0;
    switch (full) {
      case 0: return values_regs<nq, 0>(w, c, partial, begin, end, acc);
      case 1: return values_regs<nq, 1>(w, c, partial, begin, end, acc);
      case 2: return values_regs<nq, 2>(w, c, partial, begin, end, acc);
      case 3: return values_regs<nq, 3>(w, c, partial, begin, end, acc);
      default: return values_regs<nq, 4>(w, c, 0, begin, end, acc);
    }
  }

  /// Queries [q0, q0 + nq) together. Query j reads keys [first[j], keys[j]): its own
  /// head [first[j], first[nq-1]) (a window's older keys), the keys every query reads
  /// [first[nq-1], keys[0]), then its own tail [keys[0], keys[j]), in key order.
  template <int nq>
  void run(int q0) const {
    const float* q[nq];
    float* s[nq];
    float* out[nq];
    int keys[nq], first[nq];
    const int span = a.num_keys + a.num_queries;
    for (int j = 0; j < nq; ++j) {
      q[j] = a.q + (q0 + j) * a.q_stride;
      s[j] = a.scores + j * span;
      out[j] = a.out + (q0 + j) * a.out_stride;
      keys[j] = a.num_keys + q0 + j;
      first[j] = a.window > 0 && keys[j] > a.window ? keys[j] - a.window : 0;
    }
    const int shared = first[nq - 1];  // at most keys[0]: run<nq> needs window >= nq (operator())
    prefetch_first(a.k_cache, first[0]);
    for (int j = 0; j + 1 < nq; ++j) scores<1>(q + j, s + j, first[j], shared);
    scores<nq>(q, s, shared, keys[0]);
    for (int j = 1; j < nq; ++j) scores<1>(q + j, s + j, keys[0], keys[j]);
    for (int j = 0; j < nq; ++j) {
      if (a.softcap > 0.0f) softcap(s[j] + first[j], keys[j] - first[j], a.softcap);
      softmax_weights(s[j] + first[j], keys[j] - first[j], a.sink);
    }
    for (int c = 0; c < a.head_dim; c += 4 * V::width) {
      vf acc[nq][4];
      for (int j = 0; j < nq; ++j) {
        for (int i = 0; i < 4; ++i) acc[j][i] = V::zero();
      }
      prefetch_first(a.v_cache, first[0]);
      for (int j = 0; j + 1 < nq; ++j) values<1>(s + j, c, first[j], shared, acc + j);
      values<nq>(s, c, shared, keys[0], acc);
      for (int j = 1; j < nq; ++j) values<1>(s + j, c, keys[0], keys[j], acc + j);
      for (int j = 0; j < nq; ++j) {
        for (int i = 0; i < 4; ++i) {
          const int left = a.head_dim - c - i * V::width;
          if (left > 0) V::mask_store(out[j] + c + i * V::width, V::first_lanes(left), acc[j][i]);
        }
      }
    }
  }

  void operator()() const {
    int i = 0;
    if (a.window <= 0 || a.window >= tile) {
      for (; i + tile <= a.num_queries; i += tile) run<tile>(i);
    }
    for (; i < a.num_queries; ++i) run<1>(i);
  }
};

template <class V>
void attention(const attention_args& a) {
  switch (a.type) {
    case kv_type::f32: return attention_kernel<V, kv_type::f32>{a}();
    case kv_type::f16: return attention_kernel<V, kv_type::f16>{a}();
    case kv_type::bf16: return attention_kernel<V, kv_type::bf16>{a}();
  }
}

}  // namespace
}  // namespace inflight::kernels::cpu

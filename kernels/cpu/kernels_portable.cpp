// The kernel table for any x86-64 (or other) CPU: plain C++ that the compiler
// vectorizes for the baseline instruction set. Same structure as the AVX2 / AVX-512
// tables (8 partial sums per dot product), so every ISA is batch-invariant the same way.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/cpu_isa.hpp"
#include "kernels/cpu/quant_portable.hpp"

namespace inflight::kernels::cpu {
namespace {

constexpr int lanes = 8;

/// The float at p; weights in a mapped file need not be aligned.
float load_float(const float* p) {
  float v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

float dot(const float* a, const float* b, int k) {
  float s[lanes] = {};
  int i = 0;
  for (; i + lanes <= k; i += lanes) {
    for (int l = 0; l < lanes; ++l) s[l] += load_float(a + i + l) * load_float(b + i + l);
  }
  for (int l = 0; i + l < k; ++l) s[l] += load_float(a + i + l) * load_float(b + i + l);
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

void gemm(const gemm_args& a, int row_begin, int row_end) {
  for (int t = 0; t < a.n; ++t) {
    const float* x = a.x + t * a.ldx;
    float* y = a.y + t * a.ldy;
    for (int o = row_begin; o < row_end; ++o) {
      const float d = dot(x, a.w + o * a.ldw, a.k);
      y[o] = a.accumulate ? y[o] + d : d;
    }
  }
}

void typed_gemm_f32(const typed_gemm_args& a, int row_begin, int row_end) {
  gemm({reinterpret_cast<const float*>(a.x), a.ldx / 4, reinterpret_cast<const float*>(a.w.data), a.w.row_bytes / 4,
        a.y, a.ldy, a.n, a.k, a.accumulate},
       row_begin, row_end);
}

/// Element i of the key or value row of position p, as a float.
struct kv_rows {
  const attention_args& a;
  std::int64_t el = element_bytes(a.type);

  const std::byte* row(const std::byte* cache, int p) const {
    const std::int64_t r = std::int64_t(a.block_table[p / a.block_size]) * a.block_size + p % a.block_size;
    return cache + r * a.head_dim * el;
  }
  float at(const std::byte* row, int i) const {
    if (a.type == kv_type::f32) return reinterpret_cast<const float*>(row)[i];
    std::uint16_t h;
    std::memcpy(&h, row + 2 * i, sizeof(h));
    return a.type == kv_type::f16 ? fp16_to_float(h) : bf16_to_float(h);
  }
  float dot_row(const float* q, const std::byte* k) const {
    if (a.type == kv_type::f32) return dot(q, reinterpret_cast<const float*>(k), a.head_dim);
    float s[lanes] = {};
    for (int i = 0; i < a.head_dim; ++i) s[i % lanes] += q[i] * at(k, i);
    return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
  }
};

/// One query over keys [first, num_keys): first is 0, or where its window starts.
void attention_one(const attention_args& a, const float* q, int num_keys, float* out) {
  const kv_rows kv{a};
  const int first = a.window > 0 ? std::max(0, num_keys - a.window) : 0;
  float max_score = -INFINITY;
  for (int p = first; p < num_keys; ++p) {
    float s = kv.dot_row(q, kv.row(a.k_cache, p)) * a.scale;
    if (a.softcap > 0.0f) s = a.softcap * std::tanh(s / a.softcap);
    a.scores[p] = s;
    max_score = std::max(max_score, s);
  }
  max_score = std::max(max_score, a.sink);  // a sink logit (-inf: none) joins max and sum
  float sum = 0.0f;
  for (int p = first; p < num_keys; ++p) {
    a.scores[p] = std::exp(a.scores[p] - max_score);
    sum += a.scores[p];
  }
  if (a.sink > -INFINITY) sum += std::exp(a.sink - max_score);
  const float inv_sum = 1.0f / sum;
  std::fill_n(out, a.head_dim, 0.0f);
  for (int p = first; p < num_keys; ++p) {
    const std::byte* v = kv.row(a.v_cache, p);
    const float weight = a.scores[p] * inv_sum;
    for (int i = 0; i < a.head_dim; ++i) out[i] += weight * kv.at(v, i);
  }
}

void attention(const attention_args& a) {
  for (int i = 0; i < a.num_queries; ++i) attention_one(a, a.q + i * a.q_stride, a.num_keys + i, a.out + i * a.out_stride);
}

void rmsnorm_row(float* out, const float* x, const float* w, int dim, float eps) {
  const float ss = dot(x, x, dim);
  const float scale = 1.0f / std::sqrt(ss / float(dim) + eps);
  for (int i = 0; i < dim; ++i) out[i] = w[i] * (scale * x[i]);
}

void silu_mul(float* gate, const float* up, int n) {
  for (int i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

/// tanh GELU as g * sigmoid(2u), u = sqrt(2/pi) (g + 0.044715 g^3): 0.5 g (1 + tanh u)
/// without its cancellation for negative g.
void gelu_mul(float* gate, const float* up, int n) {
  constexpr float c = 1.5957691216057308f;  // 2 sqrt(2/pi)
  for (int i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-c * (g + 0.044715f * g * g * g))) * up[i];
  }
}

void prepare_f32(const prepare_args& a) {
  for (int t = 0; t < a.n; ++t) {
    std::memcpy(a.out + t * a.ld_out + a.col_begin * 4, a.x + t * a.ldx + a.col_begin,
                std::size_t(a.col_end - a.col_begin) * sizeof(float));
  }
}

void store_kv_f32(std::byte* dst, const float* src, int n) { std::memcpy(dst, src, std::size_t(n) * sizeof(float)); }

void swiglu_oai_mul(float* gate, const float* up, int n) {
  for (int i = 0; i < n; ++i) {
    const float g = std::min(gate[i], 7.0f), u = std::clamp(up[i], -7.0f, 7.0f);
    gate[i] = g / (1.0f + std::exp(-1.702f * g)) * (u + 1.0f);
  }
}

cpu_kernel_table make_table() {
  cpu_kernel_table t;
  t.isa = cpu_isa::portable;
  t.gemm = gemm;
  t.attention = attention;
  t.rmsnorm_row = rmsnorm_row;
  t.silu_mul = silu_mul;
  t.gelu_mul = gelu_mul;
  t.swiglu_oai_mul = swiglu_oai_mul;
  t.weights[int(weight_type::f32)] = {typed_gemm_f32, dequantize_f32};
  t.prepare[int(input_format::f32)] = prepare_f32;
  t.store_kv[int(kv_type::f32)] = store_kv_f32;
  add_portable_quant_kernels(t);
  return t;
}

}  // namespace

const cpu_kernel_table& portable_kernels() {
  static const cpu_kernel_table table = make_table();
  return table;
}

}  // namespace inflight::kernels::cpu

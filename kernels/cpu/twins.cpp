#include "kernels/cpu/twins.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "dtypes/dequantize.hpp"
#include "dtypes/fp8.hpp"
#include "kernels/cpu/llama.hpp"

namespace inflight::kernels::cpu {

void add_rmsnorm(float* out, float* x, const float* delta, const float* w, const std::int32_t* rows, int n, int dim,
                 float eps, bool write_back) {
  for (int i = 0; i < n; ++i) {
    const std::int64_t r = rows != nullptr ? rows[i] : i;
    float* xr = x + r * dim;
    float* o = out + std::int64_t(i) * dim;
    float ss = 0.0f;
    for (int c = 0; c < dim; ++c) {
      const float v = xr[c] + (delta != nullptr ? delta[r * dim + c] : 0.0f);
      o[c] = v;  // the sum, until the scale is known
      ss += v * v;
    }
    const float scale = 1.0f / std::sqrt(ss / float(dim) + eps);
    for (int c = 0; c < dim; ++c) {
      if (write_back) xr[c] = o[c];
      o[c] = w[c] * (scale * o[c]);
    }
  }
}

void add_bias(float* y, const float* bias, int n, int width, int row_stride) {
  for (int t = 0; t < n; ++t) {
    for (int c = 0; c < width; ++c) y[std::int64_t(t) * row_stride + c] += bias[c];
  }
}

void silu_mul_fused(float* out, const float* gate_up, int n, int hidden) {
  for (int t = 0; t < n; ++t) {
    const float* g = gate_up + std::int64_t(t) * 2 * hidden;
    for (int i = 0; i < hidden; ++i) out[std::int64_t(t) * hidden + i] = g[i] / (1.0f + std::exp(-g[i])) * g[hidden + i];
  }
}

void qk_norm(float* qkv, int row_stride, const float* q_norm, const float* k_norm, int n, int num_heads,
             int num_kv_heads, int head_dim, float eps) {
  for (int t = 0; t < n; ++t) {
    float* q = qkv + std::int64_t(t) * row_stride;
    rmsnorm(q, q, q_norm, num_heads, head_dim, eps);
    float* k = q + std::int64_t(num_heads) * head_dim;
    rmsnorm(k, k, k_norm, num_kv_heads, head_dim, eps);
  }
}

void greedy_rows(const float* logits, int n, int vocab, std::int32_t* tokens, float* logprobs) {
  for (int r = 0; r < n; ++r) {
    const float* row = logits + std::int64_t(r) * vocab;
    int best = 0;
    for (int i = 1; i < vocab; ++i) {
      if (row[i] > row[best]) best = i;
    }
    double sum = 0.0;
    for (int i = 0; i < vocab; ++i) sum += std::exp(double(row[i]) - double(row[best]));
    tokens[r] = best;
    logprobs[r] = float(-std::log(sum));
  }
}

void decode_attention_split(float* out, const float* q, const float* k_cache, const float* v_cache,
                            const std::int32_t* positions, const std::int32_t* query_start,
                            const std::int32_t* block_tables, int block_table_stride, int num_seqs, int block_size,
                            int num_heads, int num_kv_heads, int head_dim, int split_size) {
  const int group = num_heads / num_kv_heads;
  const std::int64_t kv_dim = std::int64_t(num_kv_heads) * head_dim;
  const float scale = 1.0f / std::sqrt(float(head_dim));
  std::vector<float> split_max, split_sum, split_out;
  std::vector<float> acc(std::size_t(head_dim), 0.0f);
  for (int s = 0; s < num_seqs; ++s) {
    const int t = query_start[s], ctx = positions[t] + 1;
    const int num_splits = (ctx + split_size - 1) / split_size;
    const std::int32_t* table = block_tables + std::int64_t(s) * block_table_stride;
    auto row = [&](const float* cache, int key, int kvh) {
      const std::int64_t slot = std::int64_t(table[key / block_size]) * block_size + key % block_size;
      return cache + slot * kv_dim + std::int64_t(kvh) * head_dim;
    };
    for (int h = 0; h < num_heads; ++h) {
      const int kvh = h / group;
      const float* qh = q + std::int64_t(t) * num_heads * head_dim + std::int64_t(h) * head_dim;
      split_max.assign(std::size_t(num_splits), 0.0f);
      split_sum.assign(std::size_t(num_splits), 0.0f);
      split_out.assign(std::size_t(num_splits) * std::size_t(head_dim), 0.0f);
      for (int sp = 0; sp < num_splits; ++sp) {
        const int begin = sp * split_size, end = std::min(ctx, begin + split_size);
        float m = -INFINITY, l = 0.0f;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int base = begin; base < end; base += 32) {  // a warp's 32 keys: one rescale each
          const int stop = std::min(end, base + 32);
          float scores[32];
          float piece_max = -INFINITY;
          for (int key = base; key < stop; ++key) {
            const float* k = row(k_cache, key, kvh);
            float dot = 0.0f;
            for (int d = 0; d < head_dim; ++d) dot += qh[d] * scale * k[d];
            scores[key - base] = dot;
            piece_max = std::max(piece_max, dot);
          }
          const float m_new = std::max(m, piece_max);
          const float corr = std::exp(m - m_new);
          l *= corr;
          for (auto& a : acc) a *= corr;
          for (int key = base; key < stop; ++key) {
            const float p = std::exp(scores[key - base] - m_new);
            l += p;
            const float* v = row(v_cache, key, kvh);
            for (int d = 0; d < head_dim; ++d) acc[std::size_t(d)] += p * v[d];
          }
          m = m_new;
        }
        split_max[std::size_t(sp)] = m;
        split_sum[std::size_t(sp)] = l;
        std::copy(acc.begin(), acc.end(), split_out.begin() + std::int64_t(sp) * head_dim);
      }
      // The merge: every used split rescaled to the largest max.
      const float top = *std::max_element(split_max.begin(), split_max.end());
      float total = 0.0f;
      for (int sp = 0; sp < num_splits; ++sp) total += split_sum[std::size_t(sp)] * std::exp(split_max[std::size_t(sp)] - top);
      float* o = out + std::int64_t(t) * num_heads * head_dim + std::int64_t(h) * head_dim;
      for (int d = 0; d < head_dim; ++d) {
        float v = 0.0f;
        for (int sp = 0; sp < num_splits; ++sp) {
          v += split_out[std::size_t(sp) * std::size_t(head_dim) + std::size_t(d)] * std::exp(split_max[std::size_t(sp)] - top);
        }
        o[d] = v / total;
      }
    }
  }
}

namespace {

/// Level i (0..31) of unit u of a row as the kernel's unit decode reads it: q8_0 and q4_0
/// signed (q4_0's nibble, the 8 taken off through the input's block sum), q4_k's nibble,
/// q6_k's six bits (the 32 taken off through the input's 16-value sums).
int unit_level(weight_type type, const std::byte* row, int u, int i) {
  auto byte = [](const std::byte* p) { return std::to_integer<int>(*p); };
  switch (type) {
    case weight_type::q8_0:
      return std::int8_t(row[34 * u + 2 + i]);
    case weight_type::q4_0: {
      const int b = byte(row + 18 * u + 2 + i % 16);
      return i < 16 ? b & 0xf : b >> 4;
    }
    case weight_type::q4_k: {
      const int v = 32 * (u % 8) + i, b = byte(row + 144 * (u / 8) + 16 + 32 * (v / 64) + v % 32);
      return (v % 64) < 32 ? b & 0xf : b >> 4;
    }
    default: {  // q6_k
      const std::byte* blk = row + 210 * (u / 8);
      const int v = 32 * (u % 8) + i, half = v / 128, g = (v % 128) / 32, l = v % 32;
      const int low = byte(blk + 64 * half + 32 * (g % 2) + l) >> (g < 2 ? 0 : 4) & 0xf;
      return low | (byte(blk + 128 + 32 * half + l) >> (2 * g) & 3) << 4;
    }
  }
}

/// lane_acc += unit u of the row . unit u of the prepared input (the kernel's unit_product).
float unit_product_twin(weight_type type, const std::byte* row, const std::byte* x, int cols, int u, float acc) {
  const auto* xq = reinterpret_cast<const std::int8_t*>(x);
  const std::byte* scales = x + prepared_scales_offset(cols);
  const std::byte* sums = x + prepared_sums_offset(input_of(type), cols);
  auto scale = [&](int i) {
    float v;
    std::memcpy(&v, scales + 4 * i, sizeof(v));
    return v;
  };
  auto sum16 = [&](int i) {
    std::int16_t v;
    std::memcpy(&v, sums + 2 * i, sizeof(v));
    return int(v);
  };
  int dot[2] = {0, 0};
  for (int i = 0; i < 32; ++i) dot[i / 16] += unit_level(type, row, u, i) * xq[32 * u + i];
  switch (type) {
    case weight_type::q8_0:
    case weight_type::q4_0: {
      int isum = dot[0] + dot[1];
      if (type == weight_type::q4_0) {
        std::int32_t s;
        std::memcpy(&s, sums + 4 * u, sizeof(s));
        isum -= 8 * s;
      }
      return std::fma(float(isum), load_half(row + (type == weight_type::q8_0 ? 34 : 18) * u) * scale(u), acc);
    }
    case weight_type::q4_k: {
      const std::byte* blk = row + 144 * (u / 8);
      int sc, m;
      k_scale_min(blk + 4, u % 8, sc, m);
      const float dx = scale(u / 8);
      acc = std::fma(float(sc * (dot[0] + dot[1])), load_half(blk) * dx, acc);
      return std::fma(float(m * (sum16(2 * u) + sum16(2 * u + 1))), -load_half(blk + 2) * dx, acc);
    }
    default: {  // q6_k
      const std::byte* blk = row + 210 * (u / 8);
      const int sc0 = std::int8_t(blk[192 + 2 * (u % 8)]), sc1 = std::int8_t(blk[193 + 2 * (u % 8)]);
      const int isum = sc0 * dot[0] - 32 * sc0 * sum16(2 * u) + sc1 * dot[1] - 32 * sc1 * sum16(2 * u + 1);
      return std::fma(float(isum), load_half(blk + 208) * scale(u / 8), acc);
    }
  }
}

}  // namespace

void quant_gemv_twin(const weight_view& w, int rows, int cols, const std::byte* x_prepared, std::int64_t x_row_bytes,
                     int n, float* y, std::int64_t ldy) {
  const int units = cols / 32;
  for (int t = 0; t < n; ++t) {
    const std::byte* x = x_prepared + t * x_row_bytes;
    for (int o = 0; o < rows; ++o) {
      const std::byte* row = w.data + o * w.row_bytes;
      float lanes[32];
      for (int l = 0; l < 32; ++l) {
        lanes[l] = 0.0f;
        for (int u = l; u < units; u += 32) lanes[l] = unit_product_twin(w.type, row, x, cols, u, lanes[l]);
      }
      for (int off = 16; off > 0; off /= 2) {
        float next[32];
        for (int l = 0; l < 32; ++l) next[l] = lanes[l] + lanes[l ^ off];
        std::copy_n(next, 32, lanes);
      }
      y[t * ldy + o] = lanes[0];
    }
  }
}

float fp8_quantize(const float* x, std::int64_t n, std::uint8_t* out) {
  float amax = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float scale = amax > 0.0f ? amax / e4m3_max : 1.0f;
  for (std::int64_t i = 0; i < n; ++i) out[i] = float_to_e4m3(x[i] / scale);
  return scale;
}

void fp8_linear_twin(const std::uint8_t* x8, float sx, const std::uint8_t* w8, float sw, int n, int in, int out,
                     float* y) {
  for (int t = 0; t < n; ++t) {
    for (int o = 0; o < out; ++o) {
      double acc = 0.0;
      for (int i = 0; i < in; ++i) {
        acc += double(e4m3_to_float(x8[std::int64_t(t) * in + i])) * double(e4m3_to_float(w8[std::int64_t(o) * in + i]));
      }
      y[std::int64_t(t) * out + o] = float(acc * double(sx) * double(sw));
    }
  }
}

}  // namespace inflight::kernels::cpu

// Portable kernels of the k-quant types (256-value super-blocks; layouts in
// dtypes/dequantize.cpp). A product of row r and token t is, over super-blocks s:
//
//   q4_k, q5_k:  acc += float(isum_s) * (d_s * dx_s);  acc += float(msum_s) * (-dmin_s * dx_s)
//                isum_s = sum_j sc_j * (q . x over sub-block j),  msum_s = sum_j m_j * (sum of x over j)
//   q6_k:        acc += float(isum_s) * (d_s * dx_s)
//                isum_s = sum_j sc_j * (q . x over sub-block j) - 32 * sum_j sc_j * (sum of x over j)
//   q2_k:        as q4_k over 16 sub-blocks of 16 (4-bit sc_j, m_j; the input's 16-value sums)
//   q3_k:        acc += float(isum_s) * (d_s * dx_s),  isum_s = sum_j (sc_j - 32) * (q . x over j)
//
// with exact integer sums (q unsigned: q2 two bits, q4 nibbles, q5 five bits, q6 six bits;
// q3 signed, -4..3).
#include <cstring>

#include "kernels/cpu/quant_portable.hpp"

namespace inflight::kernels::cpu {
namespace {

constexpr int super = 256;

/// Value i of a q4_k (qh null) or q5_k super-block's quantized levels.
int affine_level(const std::byte* qh, const std::byte* qs, int i) {
  const int byte = std::to_integer<int>(qs[32 * (i / 64) + i % 32]);
  const int low = (i % 64) < 32 ? byte & 0xf : byte >> 4;
  return qh == nullptr ? low : low | ((std::to_integer<int>(qh[i % 32]) >> (i / 32) & 1) << 4);
}

int q6_level(const std::byte* block, int i) {
  const int half = i / 128, g = (i % 128) / 32, l = i % 32;
  const int low = std::to_integer<int>(block[64 * half + 32 * (g % 2) + l]) >> (g < 2 ? 0 : 4) & 0xf;
  return low | ((std::to_integer<int>(block[128 + 32 * half + l]) >> (2 * g) & 3) << 4);
}

struct prepared_k {
  const std::int8_t* q;
  const std::byte* d;
  const std::byte* bsum;

  prepared_k(const std::byte* x, int k)
      : q(reinterpret_cast<const std::int8_t*>(x)),
        d(x + prepared_scales_offset(k)),
        bsum(x + prepared_sums_offset(input_format::q8_k, k)) {}
  float scale(int s) const {
    float v;
    std::memcpy(&v, d + 4 * s, sizeof(v));
    return v;
  }
  int sum16(int i) const {
    std::int16_t v;
    std::memcpy(&v, bsum + 2 * i, sizeof(v));
    return v;
  }
};

template <int block_bytes, int qh_offset, int qs_offset>
float dot_affine(const std::byte* w, const std::byte* x, int k) {
  const prepared_k p(x, k);
  float acc = 0.0f;
  for (int s = 0; s < k / super; ++s) {
    const std::byte* b = w + s * block_bytes;
    const std::byte* qh = qh_offset > 0 ? b + qh_offset : nullptr;
    int isum = 0, msum = 0;
    for (int j = 0; j < 8; ++j) {
      int sc, m, dot = 0;
      k_scale_min(b + 4, j, sc, m);
      for (int i = 32 * j; i < 32 * j + 32; ++i) dot += affine_level(qh, b + qs_offset, i) * p.q[super * s + i];
      isum += sc * dot;
      msum += m * (p.sum16(16 * s + 2 * j) + p.sum16(16 * s + 2 * j + 1));
    }
    const float dx = p.scale(s);
    acc += float(isum) * (load_half(b) * dx);
    acc += float(msum) * (-load_half(b + 2) * dx);
  }
  return acc;
}

float dot_q6_k(const std::byte* w, const std::byte* x, int k) {
  const prepared_k p(x, k);
  float acc = 0.0f;
  for (int s = 0; s < k / super; ++s) {
    const std::byte* b = w + s * 210;
    int isum = 0;
    for (int j = 0; j < 16; ++j) {
      const int sc = std::int8_t(b[192 + j]);
      int dot = 0;
      for (int i = 16 * j; i < 16 * j + 16; ++i) dot += q6_level(b, i) * p.q[super * s + i];
      isum += sc * dot - 32 * sc * p.sum16(16 * s + j);
    }
    acc += float(isum) * (load_half(b + 208) * p.scale(s));
  }
  return acc;
}

template <class F>
void for_outputs(const typed_gemm_args& a, int row_begin, int row_end, F&& f) {
  for (int t = 0; t < a.n; ++t) {
    float* y = a.y + t * a.ldy;
    for (int o = row_begin; o < row_end; ++o) {
      const float v = f(a.w.data + o * a.w.row_bytes, a.x + t * a.ldx, a.k);
      y[o] = a.accumulate ? y[o] + v : v;
    }
  }
}

void gemm_q4_k(const typed_gemm_args& a, int row_begin, int row_end) {
  for_outputs(a, row_begin, row_end, dot_affine<144, 0, 16>);
}

void gemm_q5_k(const typed_gemm_args& a, int row_begin, int row_end) {
  for_outputs(a, row_begin, row_end, dot_affine<176, 16, 48>);
}

void gemm_q6_k(const typed_gemm_args& a, int row_begin, int row_end) {
  for_outputs(a, row_begin, row_end, dot_q6_k);
}

/// Sub-block j (16 values) of a q2_k / q3_k super-block: its 2-bit levels are bits
/// shift, shift + 1 of 16 consecutive bytes of qs, its third bits (q3_k) bit j / 2 of 16
/// consecutive bytes of hmask (see dtypes/dequantize.cpp).
struct sub_block16 {
  int offset, shift;
  explicit sub_block16(int j) : offset(32 * (j / 8) + 16 * (j % 2)), shift(2 * (j % 8 / 2)) {}
};

float dot_q2_k(const std::byte* w, const std::byte* x, int k) {
  const prepared_k p(x, k);
  float acc = 0.0f;
  for (int s = 0; s < k / super; ++s) {
    const std::byte* b = w + s * 84;
    const std::int8_t* xs = p.q + super * s;
    int isum = 0, msum = 0;
    for (int j = 0; j < 16; ++j) {
      const sub_block16 sb(j);
      const std::byte* qs = b + 16 + sb.offset;
      int dot = 0;
      for (int t = 0; t < 16; ++t) dot += (std::to_integer<int>(qs[t]) >> sb.shift & 3) * xs[16 * j + t];
      const int scale_min = std::to_integer<int>(b[j]);
      isum += (scale_min & 0xf) * dot;
      msum += (scale_min >> 4) * p.sum16(16 * s + j);
    }
    const float dx = p.scale(s);
    acc += float(isum) * (load_half(b + 80) * dx);
    acc += float(msum) * (-load_half(b + 82) * dx);
  }
  return acc;
}

float dot_q3_k(const std::byte* w, const std::byte* x, int k) {
  const prepared_k p(x, k);
  float acc = 0.0f;
  for (int s = 0; s < k / super; ++s) {
    const std::byte* b = w + s * 110;
    const std::int8_t* xs = p.q + super * s;
    int isum = 0;
    for (int j = 0; j < 16; ++j) {
      const sub_block16 sb(j);
      const std::byte *qs = b + 32 + sb.offset, *hmask = b + 16 * (j % 2);
      int dot = 0;
      for (int t = 0; t < 16; ++t) {
        const int high = std::to_integer<int>(hmask[t]) >> (j / 2) & 1;
        dot += ((std::to_integer<int>(qs[t]) >> sb.shift & 3) + 4 * high - 4) * xs[16 * j + t];
      }
      isum += (q3_k_scale(b + 96, j) - 32) * dot;
    }
    acc += float(isum) * (load_half(b + 108) * p.scale(s));
  }
  return acc;
}

void gemm_q2_k(const typed_gemm_args& a, int row_begin, int row_end) {
  for_outputs(a, row_begin, row_end, dot_q2_k);
}

void gemm_q3_k(const typed_gemm_args& a, int row_begin, int row_end) {
  for_outputs(a, row_begin, row_end, dot_q3_k);
}

/// iq4_xs over a q8_k row: isum_s = sum_j (ls_j - 32) * (codebook values . x over
/// sub-block j), exact in integers; acc += float(isum_s) * (d_s * dx_s).
float dot_iq4_xs(const std::byte* w, const std::byte* x, int k) {
  const auto* xq = reinterpret_cast<const std::int8_t*>(x);
  const std::byte* dx = x + prepared_scales_offset(k);
  float acc = 0.0f;
  for (int s = 0; s < k / super; ++s) {
    const std::byte* b = w + s * 136;
    int isum = 0;
    for (int j = 0; j < 8; ++j) {
      const std::byte* qs = b + 8 + 16 * j;
      const std::int8_t* xj = xq + super * s + 32 * j;
      int dot = 0;
      for (int i = 0; i < 16; ++i) {
        const int byte = std::to_integer<int>(qs[i]);
        dot += iq4_values[byte & 0xf] * xj[i] + iq4_values[byte >> 4] * xj[i + 16];
      }
      isum += (iq4_xs_scale(b, j) - 32) * dot;
    }
    float d;
    std::memcpy(&d, dx + 4 * s, sizeof(d));
    acc += float(isum) * (load_half(b) * d);
  }
  return acc;
}

void gemm_iq4_xs(const typed_gemm_args& a, int row_begin, int row_end) {
  for (int t = 0; t < a.n; ++t) {
    float* y = a.y + t * a.ldy;
    for (int o = row_begin; o < row_end; ++o) {
      const float v = dot_iq4_xs(a.w.data + o * a.w.row_bytes, a.x + t * a.ldx, a.k);
      y[o] = a.accumulate ? y[o] + v : v;
    }
  }
}

}  // namespace

void add_portable_k_kernels(cpu_kernel_table& t) {
  t.weights[int(weight_type::iq4_xs)] = {gemm_iq4_xs, dequantize_iq4_xs};
  t.weights[int(weight_type::q4_k)] = {gemm_q4_k, dequantize_q4_k};
  t.weights[int(weight_type::q5_k)] = {gemm_q5_k, dequantize_q5_k};
  t.weights[int(weight_type::q6_k)] = {gemm_q6_k, dequantize_q6_k};
  t.weights[int(weight_type::q2_k)] = {gemm_q2_k, dequantize_q2_k};
  t.weights[int(weight_type::q3_k)] = {gemm_q3_k, dequantize_q3_k};
}

}  // namespace inflight::kernels::cpu

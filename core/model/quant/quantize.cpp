#include "core/model/quant/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/model/quant/quant_search.hpp"
#include "dtypes/dequantize.hpp"
#include "dtypes/half.hpp"

namespace inflight {
namespace quant_detail {
namespace {

/// Weighted error of x ~ d * q with q rounded and clamped, and the refitted d.
float refit_symmetric(const float* x, const float* w, int n, int qmin, int qmax, float d, float& error) {
  double sum_xq = 0.0, sum_qq = 0.0;
  for (int i = 0; i < n; ++i) {
    const int q = quantize_value(x[i], d, qmin, qmax);
    sum_xq += double(w[i]) * x[i] * q;
    sum_qq += double(w[i]) * q * q;
  }
  const float best = sum_qq > 0.0 ? float(sum_xq / sum_qq) : 0.0f;
  error = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float e = x[i] - best * float(quantize_value(x[i], best, qmin, qmax));
    error += w[i] * e * e;
  }
  return best;
}

}  // namespace

void importance(const float* x, int n, float* w) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += double(x[i]) * x[i];
  const float rms = float(std::sqrt(sum / n));
  for (int i = 0; i < n; ++i) w[i] = rms + std::fabs(x[i]);
}

int quantize_value(float x, float d, int qmin, int qmax) {
  if (d == 0.0f) return 0;
  return std::clamp(int(std::lround(x / d)), qmin, qmax);
}

float search_symmetric(const float* x, const float* w, int n, int qmin, int qmax) {
  float extreme = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > std::fabs(extreme)) extreme = x[i];
  }
  if (extreme == 0.0f) return 0.0f;
  float best_d = extreme / float(qmin), best_error = INFINITY;
  for (int step = -10; step <= 10; ++step) {
    // The extreme value maps to qmin +- one level; the refit moves d to its optimum.
    float error = 0.0f;
    const float d = refit_symmetric(x, w, n, qmin, qmax, extreme / (float(qmin) + 0.1f * float(step)), error);
    if (error < best_error) best_error = error, best_d = d;
  }
  return best_d;
}

void search_affine(const float* x, const float* w, int n, int qmax, float& s, float& b) {
  float lo = 0.0f, hi = x[0];
  for (int i = 0; i < n; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  s = 0.0f, b = lo;
  if (hi <= lo) return;
  float best_error = INFINITY;
  for (int step = -10; step <= 10; ++step) {
    const float scale = (hi - lo) / (float(qmax) + 0.1f * float(step));
    double sw = 0, sq = 0, sqq = 0, sx = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      const int q = quantize_value(x[i] - lo, scale, 0, qmax);
      sw += w[i], sq += double(w[i]) * q, sqq += double(w[i]) * q * q, sx += double(w[i]) * x[i];
      sqx += double(w[i]) * q * x[i];
    }
    const double det = sw * sqq - sq * sq;
    double fs = det > 0.0 ? (sw * sqx - sq * sx) / det : scale, fb = det > 0.0 ? (sqq * sx - sq * sqx) / det : lo;
    if (fb > 0.0) fb = 0.0, fs = sqq > 0.0 ? sqx / sqq : scale;  // the offset is a min: never above 0
    if (fs <= 0.0) continue;
    float error = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int q = quantize_value(x[i] - float(fb), float(fs), 0, qmax);
      const float e = x[i] - float(fs) * float(q) - float(fb);
      error += w[i] * e * e;
    }
    if (error < best_error) best_error = error, s = float(fs), b = float(fb);
  }
}

void store_half(std::byte* p, float value) {
  const std::uint16_t h = float_to_fp16(value);
  std::memcpy(p, &h, sizeof(h));
}

}  // namespace quant_detail

using namespace quant_detail;

void quantize_q8_0(const float* x, std::int64_t n, std::byte* out) {
  for (std::int64_t b = 0; b < n / 32; ++b, x += 32, out += 34) {
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    store_half(out, amax / 127.0f);
    const float d = load_half(out);  // the scale as stored
    for (int i = 0; i < 32; ++i) out[2 + i] = std::byte(std::int8_t(quantize_value(x[i], d, -127, 127)));
  }
}



void quantize_q4_0(const float* x, std::int64_t n, std::byte* out) {
  float w[32];
  for (std::int64_t b = 0; b < n / 32; ++b, x += 32, out += 18) {
    importance(x, 32, w);
    store_half(out, search_symmetric(x, w, 32, -8, 7));
    const float d = load_half(out);
    for (int i = 0; i < 16; ++i) {
      const int lo = quantize_value(x[i], d, -8, 7) + 8, hi = quantize_value(x[i + 16], d, -8, 7) + 8;
      out[2 + i] = std::byte(lo | (hi << 4));
    }
  }
}



void quantize_q5_0(const float* x, std::int64_t n, std::byte* out) {
  float w[32];
  for (std::int64_t b = 0; b < n / 32; ++b, x += 32, out += 22) {
    importance(x, 32, w);
    store_half(out, search_symmetric(x, w, 32, -16, 15));
    const float d = load_half(out);
    std::uint32_t high = 0;
    for (int i = 0; i < 16; ++i) {
      const int lo = quantize_value(x[i], d, -16, 15) + 16, hi = quantize_value(x[i + 16], d, -16, 15) + 16;
      out[6 + i] = std::byte((lo & 0xf) | ((hi & 0xf) << 4));
      high |= std::uint32_t(lo >> 4) << i | std::uint32_t(hi >> 4) << (i + 16);
    }
    std::memcpy(out + 2, &high, 4);  // little-endian, as GGUF stores it
  }
}

namespace {

/// q4_1 / q5_1: x ~ d * q + m with q in [0, qmax], m the block's minimum and d its range
/// over qmax (ggml's rule); the levels of the 32 values into q, the scales written at out.
void quantize_affine32(const float* x, int qmax, std::byte* out, int* q) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < 32; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  store_half(out, (hi - lo) / float(qmax));
  store_half(out + 2, lo);
  const float d = load_half(out), m = load_half(out + 2);  // as stored
  for (int i = 0; i < 32; ++i) q[i] = quantize_value(x[i] - m, d, 0, qmax);
}

}  // namespace

void quantize_q4_1(const float* x, std::int64_t n, std::byte* out) {
  int q[32];
  for (std::int64_t b = 0; b < n / 32; ++b, x += 32, out += 20) {
    quantize_affine32(x, 15, out, q);
    for (int i = 0; i < 16; ++i) out[4 + i] = std::byte(q[i] | (q[i + 16] << 4));
  }
}

void quantize_q5_1(const float* x, std::int64_t n, std::byte* out) {
  int q[32];
  for (std::int64_t b = 0; b < n / 32; ++b, x += 32, out += 24) {
    quantize_affine32(x, 31, out, q);
    std::uint32_t high = 0;
    for (int i = 0; i < 16; ++i) {
      out[8 + i] = std::byte((q[i] & 0xf) | ((q[i + 16] & 0xf) << 4));
      high |= std::uint32_t(q[i] >> 4) << i | std::uint32_t(q[i + 16] >> 4) << (i + 16);
    }
    std::memcpy(out + 4, &high, 4);  // little-endian, as GGUF stores it
  }
}



namespace {

result<void> check_fits(weight_dtype dtype, std::int64_t n) {
  if (fits_blocks(dtype, n)) return {};
  return make_error(errc::invalid_argument, "quantize: " + std::to_string(n) + " values are no whole number of " +
                                                to_string(dtype) + " blocks");
}

}  // namespace

result<void> quantize_row(weight_dtype dtype, const float* x, std::int64_t n, std::byte* out) {
  if (auto ok = check_fits(dtype, n); !ok) return ok;
  switch (dtype) {
    case weight_dtype::f32:
      std::memcpy(out, x, std::size_t(n) * sizeof(float));
      break;
    case weight_dtype::f16:
    case weight_dtype::bf16:
      for (std::int64_t i = 0; i < n; ++i) {
        const std::uint16_t h = dtype == weight_dtype::f16 ? float_to_fp16(x[i]) : float_to_bf16(x[i]);
        std::memcpy(out + 2 * i, &h, sizeof(h));
      }
      break;
    case weight_dtype::q8_0: quantize_q8_0(x, n, out); break;
    case weight_dtype::q4_0: quantize_q4_0(x, n, out); break;
    case weight_dtype::q5_0: quantize_q5_0(x, n, out); break;
    case weight_dtype::q4_1: quantize_q4_1(x, n, out); break;
    case weight_dtype::q5_1: quantize_q5_1(x, n, out); break;
    case weight_dtype::iq4_nl: quantize_iq4_nl(x, n, out); break;
    case weight_dtype::iq4_xs: quantize_iq4_xs(x, n, out); break;
    case weight_dtype::q4_k: quantize_q4_k(x, n, out); break;
    case weight_dtype::q5_k: quantize_q5_k(x, n, out); break;
    case weight_dtype::q6_k: quantize_q6_k(x, n, out); break;
    case weight_dtype::q2_k: quantize_q2_k(x, n, out); break;
    case weight_dtype::q3_k: quantize_q3_k(x, n, out); break;
    case weight_dtype::mxfp4: quantize_mxfp4(x, n, out); break;
  }
  return {};
}

result<void> dequantize_row(weight_dtype dtype, const std::byte* in, std::int64_t n, float* out) {
  if (auto ok = check_fits(dtype, n); !ok) return ok;
  dequantize(dtype, in, n, out);
  return {};
}

}  // namespace inflight

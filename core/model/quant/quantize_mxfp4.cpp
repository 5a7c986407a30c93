// mxfp4 (the OCP microscaling FP4 format, gpt-oss's expert weights): blocks of 32 FP4
// (E2M1) values sharing one power-of-two scale, an e8m0 exponent byte. Layout:
// dtypes/weight_dtype.hpp. The rule is ggml's (quantize_row_mxfp4_ref), kept exactly so
// the blocks we write are the ones llama-quantize writes for the same values: no search,
// the exponent follows from the block's largest |x| alone.
#include <cmath>

#include "core/model/quant/quantize.hpp"
#include "dtypes/dequantize.hpp"

namespace inflight {
namespace {

/// The exponent byte for a block whose largest |x| is amax: the scale 2^(e - 128) puts
/// amax at 8..16 in units of the doubled levels (4..8 in FP4's own), so amax's exponent
/// is kept and values past 12 (FP4's 6) clip to it. floor(log2f(amax)) as ggml computes
/// it, rounding included. Blocks below 2^-125 (where ggml's cast has no defined value)
/// take e = 0; all zeros too.
std::byte block_exponent(float amax) {
  if (!(amax > 0.0f)) return std::byte{0};
  const float e = std::floor(std::log2(amax)) - 2.0f + 127.0f;
  return std::byte(e < 0.0f ? 0 : int(e));
}

/// The nibble whose level times d is nearest to x; the first of equals wins (0 over -0,
/// 4 over 6 at 5), as in ggml.
int nearest_nibble(float x, float d) {
  int best = 0;
  float best_error = std::fabs(float(mxfp4_values[0]) * d - x);
  for (int q = 1; q < 16; ++q) {
    const float error = std::fabs(float(mxfp4_values[q]) * d - x);
    if (error < best_error) best = q, best_error = error;
  }
  return best;
}

}  // namespace

void quantize_mxfp4(const float* x, std::int64_t n, std::byte* out) {
  for (std::int64_t b = 0; b < n / 32; ++b, x += 32, out += 17) {
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) {
      if (amax < std::fabs(x[i])) amax = std::fabs(x[i]);  // NaNs are passed over, as in ggml
    }
    out[0] = block_exponent(amax);
    const float d = e8m0_half(out[0]);
    for (int i = 0; i < 16; ++i) out[1 + i] = std::byte(nearest_nibble(x[i], d) | nearest_nibble(x[i + 16], d) << 4);
  }
}

}  // namespace inflight

#pragma once
/// FP8 E4M3 (the OCP "fn" variant the GPUs compute with: 4 exponent bits of bias 7, 3
/// mantissa bits, no infinities, NaN = S.1111.111, largest finite 448, smallest
/// subnormal 2^-9) <-> fp32, bit-exact and portable: the CPU twin of the device's
/// saturating conversion (__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)).

#include <bit>
#include <cmath>
#include <cstdint>

namespace inflight {

inline constexpr float e4m3_max = 448.0f;

/// Rounds to nearest even; magnitudes past 448 (infinities included) saturate to 448;
/// NaN gives 0x7f.
inline std::uint8_t float_to_e4m3(float value) {
  if (std::isnan(value)) return 0x7f;
  const auto sign = std::uint8_t((std::bit_cast<std::uint32_t>(value) >> 24) & 0x80u);
  const float a = std::fabs(value);
  if (a >= e4m3_max) return std::uint8_t(sign | 0x7e);
  if (a < 0x1p-6f) {
    // Subnormals in units of 2^-9 (exact scaling); 8 units is the smallest normal, 0x08.
    return std::uint8_t(sign | std::uint8_t(std::nearbyint(a * 512.0f)));
  }
  int e = 0;
  (void)std::frexp(a, &e);  // a = f 2^e, f in [0.5, 1): a = 1.xxx 2^(e - 1)
  const int exponent = e - 1;  // -6 .. 8
  auto q = int(std::nearbyint(std::ldexp(a, 3 - exponent)));  // 8 .. 16: 1.xxx with 3 fraction bits
  int biased = exponent + 7;
  if (q == 16) q = 8, ++biased;
  return std::uint8_t(sign | (biased << 3) | (q - 8));
}

inline float e4m3_to_float(std::uint8_t code) {
  const int exponent = (code >> 3) & 0xf, mantissa = code & 0x7;
  if (exponent == 0xf && mantissa == 0x7) return std::nanf("");
  const float magnitude = exponent == 0 ? float(mantissa) * 0x1p-9f : std::ldexp(1.0f + float(mantissa) / 8.0f, exponent - 7);
  return (code & 0x80) != 0 ? -magnitude : magnitude;
}

}  // namespace inflight

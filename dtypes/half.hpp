#pragma once
/// bf16 / fp16 <-> fp32 conversions (round to nearest even), bit-exact and portable.

#include <bit>
#include <cstdint>

namespace inflight {

/// bf16 is the top half of an fp32: widening is a shift.
inline float bf16_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(std::uint32_t(bits) << 16);
}

/// Rounds to nearest even; NaN stays NaN (quiet), infinities stay infinite.
inline std::uint16_t float_to_bf16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    // Truncating a NaN could clear every mantissa bit and turn it into an infinity.
    return std::uint16_t((bits >> 16) | 0x0040u);
  }
  const std::uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return std::uint16_t((bits + rounding) >> 16);
}

/// IEEE 754 binary16 to fp32; exact for every input (subnormals, infinities, NaN).
inline float fp16_to_float(std::uint16_t bits) {
  const std::uint32_t sign = std::uint32_t(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu;
  std::uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) {
    return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  }
  if (mantissa == 0) return std::bit_cast<float>(sign);
  // Subnormal: value = mantissa * 2^-24, exactly representable in fp32.
  const float magnitude = float(mantissa) * 0x1p-24f;
  return sign != 0 ? -magnitude : magnitude;
}

/// fp32 to IEEE 754 binary16, round to nearest even; overflow gives infinity.
inline std::uint16_t float_to_fp16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint16_t sign = std::uint16_t((bits >> 16) & 0x8000u);
  const std::uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits >= 0x7f800000u) {  // infinity or NaN
    const bool is_nan = abs_bits > 0x7f800000u;
    return std::uint16_t(sign | 0x7c00u | (is_nan ? 0x200u : 0u));
  }
  if (abs_bits >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u);  // rounds past 65504
  const int exponent = int(abs_bits >> 23) - 127;
  if (exponent >= -14) {  // normal range of fp16
    const std::uint32_t mantissa = abs_bits & 0x7fffffu;
    std::uint32_t half = (std::uint32_t(exponent + 15) << 10) | (mantissa >> 13);
    const std::uint32_t rest = mantissa & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into exponent
    return std::uint16_t(sign | half);
  }
  if (exponent < -25) return sign;  // below half of the smallest subnormal
  // Subnormal: shift the full 24-bit significand into 10 bits of 2^-24 units.
  const std::uint32_t significand = (abs_bits & 0x7fffffu) | 0x800000u;
  const int shift = -exponent - 1;  // 14..24 bits dropped: 126 - 14 - e_biased
  std::uint32_t half = significand >> shift;
  const std::uint32_t rest = significand & ((1u << shift) - 1u);
  const std::uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
  return std::uint16_t(sign | half);
}

}  // namespace inflight

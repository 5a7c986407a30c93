#include "kernels/cpu/weight_types.hpp"

#include <cstring>

namespace inflight::kernels::cpu {
namespace {

struct type_row {
  const char* name;
  weight_layout layout;
};

// The block layouts of core/model/quant/weight_dtype.cpp, in weight_type's order.
constexpr type_row type_table[num_weight_types] = {
    {"f32", {1, 4, input_format::f32}},      {"f16", {1, 2, input_format::f32}},
    {"bf16", {1, 2, input_format::bf16}},    {"q8_0", {32, 34, input_format::q8_0}},
    {"q4_0", {32, 18, input_format::q8_0}},  {"q4_k", {256, 144, input_format::q8_k}},
    {"q5_k", {256, 176, input_format::q8_k}}, {"q6_k", {256, 210, input_format::q8_k}},
    {"q5_0", {32, 22, input_format::q8_0}},
};

std::int64_t align64(std::int64_t bytes) { return (bytes + 63) / 64 * 64; }

/// Values per scale of a prepared integer format.
std::int64_t scale_block(input_format format) { return format == input_format::q8_0 ? 32 : 256; }

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

}  // namespace

weight_layout layout_of(weight_type type) { return type_table[int(type)].layout; }

const char* to_string(weight_type type) { return type_table[int(type)].name; }

const char* to_string(input_format format) {
  static constexpr const char* names[num_input_formats] = {"f32", "bf16", "q8_0", "q8_k"};
  return names[int(format)];
}

const char* to_string(kv_type type) {
  static constexpr const char* names[num_kv_types] = {"f32", "f16", "bf16"};
  return names[int(type)];
}

int element_bytes(kv_type type) { return type == kv_type::f32 ? 4 : 2; }

std::int64_t row_bytes_of(weight_type type, std::int64_t cols) {
  const auto layout = layout_of(type);
  return cols / layout.block_values * layout.block_bytes;
}

std::int64_t prepared_scales_offset(std::int64_t k) { return align64(k); }

std::int64_t prepared_sums_offset(input_format format, std::int64_t k) {
  return align64(k) + align64(k / scale_block(format) * 4);
}

std::int64_t prepared_row_bytes(input_format format, std::int64_t k) {
  switch (format) {
    case input_format::f32:
      return align64(4 * k);
    case input_format::bf16:
      return align64(2 * k);
    case input_format::q8_0:
      return prepared_sums_offset(format, k) + align64(k / 32 * 4);
    case input_format::q8_k:
      return prepared_sums_offset(format, k) + align64(k / 16 * 2);
  }
  return 0;
}

weight_view f32_weights(const float* w, std::int64_t cols) {
  return {reinterpret_cast<const std::byte*>(w), cols * std::int64_t(sizeof(float)), weight_type::f32};
}

const float* as_f32(const weight_view& w) {
  return w.type == weight_type::f32 ? reinterpret_cast<const float*>(w.data) : nullptr;
}

float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return float_of(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent != 0) return float_of(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24, exact in float.
  const float magnitude = float(mantissa) * 5.9604644775390625e-8f;
  return sign != 0 ? -magnitude : magnitude;
}

std::uint16_t float_to_fp16(float f) {
  const std::uint32_t u = bits_of(f);
  const std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return std::uint16_t(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN stays NaN
  if (abs >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs >= 0x38800000u) {  // normal half: drop 13 bits, round to nearest even
    const std::uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
    return std::uint16_t(sign | ((rounded - 0x38000000u) >> 13));
  }
  // Subnormal half (or zero): value / 2^-24 rounded to nearest even, exact in float.
  const float scaled = float_of(abs) * 16777216.0f;
  float whole = float(std::int32_t(scaled));
  const float rest = scaled - whole;
  if (rest > 0.5f || (rest == 0.5f && (std::int32_t(whole) & 1) != 0)) whole += 1.0f;
  return std::uint16_t(sign | std::uint16_t(whole));
}

float bf16_to_float(std::uint16_t h) { return float_of(std::uint32_t(h) << 16); }

std::uint16_t float_to_bf16(float f) {
  const std::uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x40u);  // quiet NaN
  return std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace inflight::kernels::cpu

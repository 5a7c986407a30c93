#include "kernels/cpu/weight_types.hpp"

namespace inflight::kernels::cpu {
namespace {

// The input format of each type, in weight_dtype's order.
constexpr input_format input_table[num_weight_types] = {
    input_format::f32,  input_format::f32,  input_format::bf16, input_format::q8_0, input_format::q8_0,
    input_format::q8_k, input_format::q8_k, input_format::q8_k, input_format::q8_0, input_format::q8_0,
    input_format::q8_0, input_format::q8_0, input_format::q8_k, input_format::q8_k, input_format::q8_k,
    input_format::q8_0,
};

std::int64_t align64(std::int64_t bytes) { return (bytes + 63) / 64 * 64; }

/// Values per scale of a prepared integer format.
std::int64_t scale_block(input_format format) { return format == input_format::q8_0 ? 32 : 256; }

}  // namespace

input_format input_of(weight_type type) { return input_table[int(type)]; }

const char* to_string(input_format format) {
  static constexpr const char* names[num_input_formats] = {"f32", "bf16", "q8_0", "q8_k"};
  return names[int(format)];
}

const char* to_string(kv_type type) {
  static constexpr const char* names[num_kv_types] = {"f32", "f16", "bf16"};
  return names[int(type)];
}

int element_bytes(kv_type type) { return type == kv_type::f32 ? 4 : 2; }

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

}  // namespace inflight::kernels::cpu

#pragma once
/// The storage types of weight matrices and of the KV cache as the CPU kernels see them,
/// and the input (activation) formats their products read.
///
/// The weight types are dtypes/weight_dtype.hpp's (names, GGUF's block layouts: a row can
/// be read straight from a mapped file); here each gets the input format its products read.
///
/// A product y = x W^T over a quantized W reads x "prepared" once per product: each
/// input row converted into the format its weight type's kernels want. Types that share
/// a format share the prepared rows, so a forward pass prepares a normalized input once
/// per format, not once per matrix. The prepared layouts (rows of k values):
///
///   f32   float x[k]                                           (the input itself)
///   bf16  uint16 x[k]                                          (bf16, rounded to nearest even)
///   q8_0  int8 q[k] | float d[k/32] | int32 sum[k/32]          x ~ d[b] * q, sum[b] = sum of block b's q
///   q8_k  int8 q[k] | float d[k/256] | int16 bsum[k/16]        x ~ d[b] * q, bsum: sums of 16 q
///
/// Each part starts at a multiple of 64 bytes from the row's start, and a prepared row
/// takes prepared_row_bytes(format, k) bytes (a multiple of 64).

#include <cstddef>
#include <cstdint>

#include "dtypes/half.hpp"
#include "dtypes/weight_dtype.hpp"

namespace inflight::kernels::cpu {

using weight_type = weight_dtype;
inline constexpr int num_weight_types = num_weight_dtypes;
// Scalar half conversions (round to nearest even): dtypes/half.hpp's.
using ::inflight::bf16_to_float;
using ::inflight::float_to_bf16;
using ::inflight::float_to_fp16;
using ::inflight::fp16_to_float;

/// The input format a weight type's products read (see the sketch above).
enum class input_format : std::uint8_t { f32, bf16, q8_0, q8_k };
inline constexpr int num_input_formats = 4;

/// Element type of the paged KV cache.
enum class kv_type : std::uint8_t { f32, f16, bf16 };
inline constexpr int num_kv_types = 3;

/// The input format `type`'s products read. Its name and block layout: to_string(type),
/// layout_of(type) and row_bytes(type, cols) of dtypes/weight_dtype.hpp.
input_format input_of(weight_type type);
/// "f32" | "bf16" | "q8_0" | "q8_k".
const char* to_string(input_format format);
/// "f32" | "f16" | "bf16".
const char* to_string(kv_type type);
/// Bytes of one element of the KV cache.
int element_bytes(kv_type type);
/// Bytes of one prepared input row of k values (a multiple of 64).
std::int64_t prepared_row_bytes(input_format format, std::int64_t k);
/// Offsets of the scale and sum parts of a prepared q8_0 / q8_k row of k values.
std::int64_t prepared_scales_offset(std::int64_t k);
std::int64_t prepared_sums_offset(input_format format, std::int64_t k);

/// A weight matrix [rows x cols]: row o at data + o * row_bytes, each a whole number of
/// `type`'s blocks. The data may sit in a read-only mapping at any byte offset: the
/// kernels assume no alignment.
struct weight_view {
  const std::byte* data = nullptr;
  std::int64_t row_bytes = 0;
  weight_type type = weight_type::f32;
};

/// A row-major f32 matrix with rows of `cols` floats, as a weight view.
weight_view f32_weights(const float* w, std::int64_t cols);
/// The floats of an f32 view; null for any other type.
const float* as_f32(const weight_view& w);

}  // namespace inflight::kernels::cpu

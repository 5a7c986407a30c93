#pragma once
/// A weight matrix of one storage type: [rows x cols], cols innermost (PyTorch Linear's
/// [out x in]), each row a whole number of the type's blocks. The bytes are owned (a
/// model made or converted in memory) or a view into memory someone else keeps alive
/// (a mapped GGUF or safetensors file), so a quantized file is used as it is.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/base/error.hpp"
#include "dtypes/weight_dtype.hpp"

namespace inflight {

class weight_tensor {
 public:
  weight_tensor() = default;
  /// Owned fp32 values, rows * cols of them (any other count gives an empty tensor).
  static weight_tensor from_f32(std::vector<float> values, std::int64_t rows, std::int64_t cols);
  /// Owned bytes of `dtype`, rows * row_bytes(dtype, cols) of them (else an empty tensor).
  static weight_tensor from_bytes(weight_dtype dtype, std::int64_t rows, std::int64_t cols,
                                  std::vector<std::byte> bytes);
  /// A view of bytes that `keep_alive` keeps valid (e.g. a shared_ptr to a mapped file);
  /// errc::corrupt_file when the bytes do not hold exactly rows x cols values of `dtype`.
  static result<weight_tensor> try_view(weight_dtype dtype, std::int64_t rows, std::int64_t cols,
                            std::span<const std::byte> bytes, std::shared_ptr<const void> keep_alive);

  weight_dtype dtype() const { return dtype_; }
  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  bool empty() const { return rows_ == 0; }
  std::int64_t num_values() const { return rows_ * cols_; }
  std::int64_t row_bytes() const { return inflight::row_bytes(dtype_, cols_); }
  std::span<const std::byte> bytes() const { return {data_, std::size_t(rows_ * row_bytes())}; }
  /// Row `r`'s bytes.
  std::span<const std::byte> row(std::int64_t r) const { return bytes().subspan(std::size_t(r * row_bytes()), std::size_t(row_bytes())); }
  /// Rows [first, first + count) as a view that keeps this tensor's memory alive (a fused
  /// matrix's parts: Phi-3's qkv_proj); errc::invalid_argument when out of range.
  result<weight_tensor> try_rows(std::int64_t first, std::int64_t count) const;
  /// The values of an f32 tensor (empty span for any other type).
  std::span<const float> f32() const;
  /// True when both hold the same type, shape and bytes.
  bool operator==(const weight_tensor& other) const;
  /// True when both are the same memory (a tied classifier).
  bool shares_storage(const weight_tensor& other) const { return data_ == other.data_ && rows_ == other.rows_; }

 private:
  weight_dtype dtype_ = weight_dtype::f32;
  std::int64_t rows_ = 0;
  std::int64_t cols_ = 0;
  const std::byte* data_ = nullptr;
  std::shared_ptr<const void> owner_;
};

/// Row `r` as fp32 values (`out` holds cols()); errc::unsupported for a type this build
/// cannot decode.
result<void> try_row_to_f32(const weight_tensor& tensor, std::int64_t r, std::span<float> out);
/// The whole tensor as fp32 values, row-major (for writers and backends that take fp32).
result<std::vector<float>> try_to_f32(const weight_tensor& tensor);

}  // namespace inflight

#include "core/model/weight_tensor.hpp"

#include <algorithm>
#include <cstring>
#include <new>

#include "core/model/quant/quantize.hpp"

namespace inflight {

weight_tensor weight_tensor::from_f32(std::vector<float> values, std::int64_t rows, std::int64_t cols) {
  auto owned = std::make_shared<std::vector<float>>(std::move(values));
  const auto* data = reinterpret_cast<const std::byte*>(owned->data());
  const std::span<const std::byte> bytes(data, owned->size() * sizeof(float));
  return try_view(weight_dtype::f32, rows, cols, bytes, std::move(owned)).value_or(weight_tensor{});
}

weight_tensor weight_tensor::from_bytes(weight_dtype dtype, std::int64_t rows, std::int64_t cols,
                                        std::vector<std::byte> bytes) {
  auto owned = std::make_shared<std::vector<std::byte>>(std::move(bytes));
  const std::span<const std::byte> view_bytes(owned->data(), owned->size());
  return try_view(dtype, rows, cols, view_bytes, std::move(owned)).value_or(weight_tensor{});
}

result<weight_tensor> weight_tensor::try_view(weight_dtype dtype, std::int64_t rows, std::int64_t cols,
                                             std::span<const std::byte> bytes, std::shared_ptr<const void> keep_alive) {
  std::int64_t total = 0;
  const bool is_valid_shape = rows >= 0 && cols > 0 && cols <= (std::int64_t(1) << 40) && fits_blocks(dtype, cols) &&
                              !__builtin_mul_overflow(rows, inflight::row_bytes(dtype, cols), &total);
  if (!is_valid_shape || total != std::int64_t(bytes.size())) {
    return make_error(errc::corrupt_file, std::to_string(bytes.size()) + " bytes do not hold a [" +
                                              std::to_string(rows) + " x " + std::to_string(cols) + "] " +
                                              to_string(dtype) + " matrix");
  }
  weight_tensor t;
  t.dtype_ = dtype;
  t.rows_ = rows;
  t.cols_ = cols;
  t.data_ = bytes.data();
  t.owner_ = std::move(keep_alive);
  return t;
}

result<weight_tensor> weight_tensor::try_rows(std::int64_t first, std::int64_t count) const {
  if (first < 0 || count <= 0 || first > rows_ - count) {
    return make_error(errc::invalid_argument, "rows [" + std::to_string(first) + ", +" + std::to_string(count) +
                                                  ") of a matrix of " + std::to_string(rows_) + " rows");
  }
  weight_tensor t = *this;
  t.rows_ = count;
  t.data_ = data_ + first * row_bytes();
  return t;
}

std::span<const float> weight_tensor::f32() const {
  if (dtype_ != weight_dtype::f32 || empty()) return {};
  return {reinterpret_cast<const float*>(data_), std::size_t(num_values())};
}

bool weight_tensor::operator==(const weight_tensor& other) const {
  if (dtype_ != other.dtype_ || rows_ != other.rows_ || cols_ != other.cols_) return false;
  const auto a = bytes(), b = other.bytes();
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

result<void> try_row_to_f32(const weight_tensor& tensor, std::int64_t r, std::span<float> out) {
  if (r < 0 || r >= tensor.rows() || std::int64_t(out.size()) != tensor.cols()) {
    return make_error(errc::invalid_argument, "weight row " + std::to_string(r) + " out of range");
  }
  return dequantize_row(tensor.dtype(), tensor.row(r).data(), tensor.cols(), out.data());
}

result<std::vector<float>> try_to_f32(const weight_tensor& tensor) {
  std::vector<float> out;
  try {
    out.resize(std::size_t(tensor.num_values()));
  } catch (const std::bad_alloc&) {
    return make_error(errc::out_of_memory, "not enough memory to decode a weight tensor to fp32");
  }
  const auto cols = std::size_t(tensor.cols());
  for (std::int64_t r = 0; r < tensor.rows(); ++r) {
    auto ok = try_row_to_f32(tensor, r, std::span<float>(out).subspan(std::size_t(r) * cols, cols));
    if (!ok) return std::unexpected(ok.error());
  }
  return out;
}

}  // namespace inflight

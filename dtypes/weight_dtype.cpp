#include "dtypes/weight_dtype.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace inflight {
namespace {

struct dtype_row {
  weight_dtype dtype;
  const char* name;
  dtype_layout layout;
};

// One row per type: the only place its name and block layout are written down.
constexpr std::array<dtype_row, num_weight_dtypes> dtype_table{{
    {weight_dtype::f32, "f32", {1, 4}},
    {weight_dtype::f16, "f16", {1, 2}},
    {weight_dtype::bf16, "bf16", {1, 2}},
    {weight_dtype::q8_0, "q8_0", {32, 34}},
    {weight_dtype::q4_0, "q4_0", {32, 18}},
    {weight_dtype::q4_k, "q4_k", {256, 144}},
    {weight_dtype::q5_k, "q5_k", {256, 176}},
    {weight_dtype::q6_k, "q6_k", {256, 210}},
    {weight_dtype::q5_0, "q5_0", {32, 22}},
    {weight_dtype::q4_1, "q4_1", {32, 20}},
    {weight_dtype::q5_1, "q5_1", {32, 24}},
    {weight_dtype::iq4_nl, "iq4_nl", {32, 18}},
    {weight_dtype::iq4_xs, "iq4_xs", {256, 136}},
    {weight_dtype::q2_k, "q2_k", {256, 84}},
    {weight_dtype::q3_k, "q3_k", {256, 110}},
    {weight_dtype::mxfp4, "mxfp4", {32, 17}},
}};

const dtype_row& row_of(weight_dtype dtype) { return dtype_table[std::size_t(dtype)]; }

}  // namespace

dtype_layout layout_of(weight_dtype dtype) { return row_of(dtype).layout; }

const char* to_string(weight_dtype dtype) { return row_of(dtype).name; }

std::string weight_dtype_names() {
  std::string names;
  for (const auto& row : dtype_table) names += (names.empty() ? "" : " | ") + std::string(row.name);
  return names;
}

std::optional<weight_dtype> try_parse_weight_dtype(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  for (const auto& row : dtype_table) {
    if (lower == row.name) return row.dtype;
  }
  return std::nullopt;
}

bool is_quantized(weight_dtype dtype) { return layout_of(dtype).block_values > 1; }

bool fits_blocks(weight_dtype dtype, std::int64_t cols) { return cols > 0 && cols % layout_of(dtype).block_values == 0; }

std::int64_t row_bytes(weight_dtype dtype, std::int64_t cols) {
  const auto layout = layout_of(dtype);
  return cols / layout.block_values * layout.block_bytes;
}

}  // namespace inflight

// GGUF metadata values and the type tables of the format.
#include <array>
#include <bit>
#include <cstring>
#include <limits>

#include "core/model/gguf/gguf.hpp"

namespace inflight {

static_assert(std::endian::native == std::endian::little,
              "GGUF files are read in place as little-endian; a big-endian host would need byte swaps");

namespace {

struct gguf_type_row {
  const char* name;
  std::size_t size;
};

constexpr std::array<gguf_type_row, num_gguf_types> gguf_type_table{{
    {"u8", 1}, {"i8", 1}, {"u16", 2}, {"i16", 2}, {"u32", 4}, {"i32", 4}, {"f32", 4},
    {"bool", 1}, {"string", 0}, {"array", 0}, {"u64", 8}, {"i64", 8}, {"f64", 8},
}};

struct ggml_type_row {
  std::uint32_t id;
  const char* name;
};

// ggml's names for the ids a file may carry, for error messages.
constexpr std::array<ggml_type_row, 32> ggml_names{{
    {0, "F32"},      {1, "F16"},      {2, "Q4_0"},     {3, "Q4_1"},    {6, "Q5_0"},    {7, "Q5_1"},
    {8, "Q8_0"},     {9, "Q8_1"},     {10, "Q2_K"},    {11, "Q3_K"},   {12, "Q4_K"},   {13, "Q5_K"},
    {14, "Q6_K"},    {15, "Q8_K"},    {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"},
    {20, "IQ4_NL"},  {21, "IQ3_S"},   {22, "IQ2_S"},   {23, "IQ4_XS"}, {24, "I8"},     {25, "I16"},
    {26, "I32"},     {27, "I64"},     {28, "F64"},     {29, "IQ1_M"},  {30, "BF16"},   {34, "TQ1_0"},
    {35, "TQ2_0"},   {39, "MXFP4"},
}};

struct ggml_dtype_row {
  std::uint32_t id;
  weight_dtype dtype;
};

constexpr std::array<ggml_dtype_row, num_weight_dtypes> ggml_dtypes{{
    {0, weight_dtype::f32},   {1, weight_dtype::f16},   {30, weight_dtype::bf16}, {8, weight_dtype::q8_0},
    {2, weight_dtype::q4_0},  {12, weight_dtype::q4_k}, {13, weight_dtype::q5_k}, {14, weight_dtype::q6_k},
    {6, weight_dtype::q5_0},  {3, weight_dtype::q4_1},  {7, weight_dtype::q5_1}, {20, weight_dtype::iq4_nl},
    {23, weight_dtype::iq4_xs}, {10, weight_dtype::q2_k}, {11, weight_dtype::q3_k}, {39, weight_dtype::mxfp4},
}};

/// The value of a fixed-size element in its type's terms, zero-extended.
std::uint64_t load_bits(const std::byte* p, std::size_t size) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, p, size);
  return bits;
}

std::optional<std::int64_t> int_of(gguf_type type, std::uint64_t bits) {
  switch (type) {
    case gguf_type::u8: case gguf_type::u16: case gguf_type::u32: return std::int64_t(bits);
    case gguf_type::i8: return std::int64_t(std::int8_t(bits));
    case gguf_type::i16: return std::int64_t(std::int16_t(bits));
    case gguf_type::i32: return std::int64_t(std::int32_t(bits));
    case gguf_type::i64: return std::bit_cast<std::int64_t>(bits);
    case gguf_type::u64:
      if (bits > std::uint64_t(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
      return std::int64_t(bits);
    default: return std::nullopt;
  }
}

std::optional<double> float_of(gguf_type type, std::uint64_t bits) {
  if (type == gguf_type::f32) return double(std::bit_cast<float>(std::uint32_t(bits)));
  if (type == gguf_type::f64) return std::bit_cast<double>(bits);
  return std::nullopt;
}

const gguf_value& empty_value() {
  static const gguf_value value;
  return value;
}

}  // namespace

const char* to_string(gguf_type type) {
  const auto i = std::uint32_t(type);
  return i < num_gguf_types ? gguf_type_table[i].name : "unknown";
}

std::size_t fixed_size_of(gguf_type type) {
  const auto i = std::uint32_t(type);
  return i < num_gguf_types ? gguf_type_table[i].size : 0;
}

std::optional<weight_dtype> weight_dtype_of_ggml(std::uint32_t ggml_type) {
  for (const auto& row : ggml_dtypes) {
    if (row.id == ggml_type) return row.dtype;
  }
  return std::nullopt;
}

std::uint32_t ggml_type_of(weight_dtype dtype) {
  for (const auto& row : ggml_dtypes) {
    if (row.dtype == dtype) return row.id;
  }
  return 0;
}

std::string ggml_type_name(std::uint32_t ggml_type) {
  for (const auto& row : ggml_names) {
    if (row.id == ggml_type) return row.name;
  }
  return "type " + std::to_string(ggml_type);
}

std::optional<std::int64_t> gguf_value::as_int() const { return int_of(type_, bits_); }

std::optional<double> gguf_value::as_float() const { return float_of(type_, bits_); }

std::optional<bool> gguf_value::as_bool() const {
  if (type_ != gguf_type::boolean) return std::nullopt;
  return bits_ != 0;
}

std::optional<std::string_view> gguf_value::as_string() const {
  if (type_ != gguf_type::string) return std::nullopt;
  return text_;
}

gguf_type gguf_value::element_type() const { return array_ ? array_->element_type : gguf_type::u8; }

std::size_t gguf_value::size() const { return array_ ? array_->count : 0; }

std::optional<std::int64_t> gguf_value::int_at(std::size_t i) const {
  const std::size_t size = fixed_size_of(element_type());
  if (!array_ || i >= array_->count || size == 0) return std::nullopt;
  return int_of(array_->element_type, load_bits(array_->raw.data() + i * size, size));
}

std::optional<double> gguf_value::float_at(std::size_t i) const {
  const std::size_t size = fixed_size_of(element_type());
  if (!array_ || i >= array_->count || size == 0) return std::nullopt;
  return float_of(array_->element_type, load_bits(array_->raw.data() + i * size, size));
}

std::string_view gguf_value::string_at(std::size_t i) const {
  if (!array_ || i >= array_->strings.size()) return {};
  return array_->strings[i];
}

const gguf_value& gguf_value::array_at(std::size_t i) const {
  if (!array_ || i >= array_->arrays.size()) return empty_value();
  return array_->arrays[i];
}

std::int64_t gguf_tensor_info::rows() const {
  std::int64_t rows = 1;
  for (std::size_t i = 1; i < ne.size(); ++i) rows *= ne[i];
  return rows;
}

}  // namespace inflight

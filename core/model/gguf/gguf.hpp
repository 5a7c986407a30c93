#pragma once
/// Reader for GGUF files (llama.cpp's format, versions 2 and 3, little-endian):
///
///   "GGUF" | u32 version | u64 num_tensors | u64 num_kv
///   num_kv x      string key | u32 value type | value
///   num_tensors x string name | u32 num_dims | num_dims x u64 ne | u32 ggml type | u64 offset
///   padding to general.alignment (u32, default 32)
///   data: each tensor at its offset (a multiple of the alignment) from here
///
///   string = u64 length | bytes (no NUL);  array = u32 element type | u64 count | elements
///   ne[0] is the innermost dimension: a [rows x cols] matrix is ne = {cols, rows}.
///
/// The file is mapped read-only and every count, length, offset and size is checked
/// against its size before use, so a truncated or corrupt file is errc::corrupt_file
/// with a message naming what is wrong, never an out-of-bounds read or an allocation
/// larger than a small multiple of the file. Tensors are views into the mapping.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/mapped_file.hpp"
#include "core/model/weight_tensor.hpp"

namespace inflight {

/// Metadata value types (their ids in the file).
enum class gguf_type : std::uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
inline constexpr std::uint32_t num_gguf_types = 13;

/// "u8", "string", "array", ...
const char* to_string(gguf_type type);
/// Bytes of one value of a fixed-size type (0 for string and array).
std::size_t fixed_size_of(gguf_type type);

/// The ggml tensor types inflight stores (weight_dtype), by their GGUF type id:
/// F32 0, F16 1, Q4_0 2, Q8_0 8, Q4_K 12, Q5_K 13, Q6_K 14, BF16 30.
std::optional<weight_dtype> weight_dtype_of_ggml(std::uint32_t ggml_type);
std::uint32_t ggml_type_of(weight_dtype dtype);
/// ggml's name of a type id ("Q5_1", "IQ2_XS", ...), "type N" for ids it does not name.
std::string ggml_type_name(std::uint32_t ggml_type);

struct gguf_array;

/// One metadata value: a scalar, a string, or an array of them (arrays may nest).
/// Strings are views into the file's bytes; they live as long as the gguf_file.
class gguf_value {
 public:
  gguf_type type() const { return type_; }
  bool is_array() const { return type_ == gguf_type::array; }

  /// An integer of any integer type (u64 above INT64_MAX: nullopt); nullopt otherwise.
  std::optional<std::int64_t> as_int() const;
  /// f32 or f64; nullopt otherwise.
  std::optional<double> as_float() const;
  std::optional<bool> as_bool() const;
  std::optional<std::string_view> as_string() const;

  /// Arrays: the element type and count (u8 and 0 for a scalar).
  gguf_type element_type() const;
  std::size_t size() const;
  /// Element `i` of an integer / float / bool array, as as_int / as_float / as_bool give it.
  std::optional<std::int64_t> int_at(std::size_t i) const;
  std::optional<double> float_at(std::size_t i) const;
  /// Element `i` of a string array ("" past the end or for other arrays).
  std::string_view string_at(std::size_t i) const;
  /// Element `i` of an array of arrays (an empty u8 scalar otherwise).
  const gguf_value& array_at(std::size_t i) const;

 private:
  friend class gguf_parser;
  gguf_type type_ = gguf_type::u8;
  std::uint64_t bits_ = 0;            ///< scalar bits, little-endian, zero-extended
  std::string_view text_;             ///< string
  std::shared_ptr<const gguf_array> array_;
};

/// An array's contents: fixed-size elements stay as bytes in the file.
struct gguf_array {
  gguf_type element_type = gguf_type::u8;
  std::size_t count = 0;
  std::span<const std::byte> raw;          ///< fixed-size elements
  std::vector<std::string_view> strings;   ///< string elements
  std::vector<gguf_value> arrays;          ///< nested arrays
};

/// One tensor's header entry and its bytes in the mapping.
struct gguf_tensor_info {
  std::string_view name;
  std::vector<std::int64_t> ne;         ///< innermost first, 1 to 4 of them
  std::uint32_t ggml_type = 0;
  weight_dtype dtype = weight_dtype::f32;
  std::uint64_t offset = 0;             ///< from the start of the data section
  std::span<const std::byte> bytes;

  /// ne[0]: values per row.
  std::int64_t cols() const { return ne.empty() ? 0 : ne[0]; }
  /// The product of ne[1..]: 1 for a vector.
  std::int64_t rows() const;
};

/// Limits the reader enforces beyond what the file size implies.
struct gguf_limits {
  static constexpr std::size_t max_name_bytes = 64;       ///< tensor names, as ggml
  static constexpr std::size_t max_key_bytes = 1 << 16;
  static constexpr int max_dims = 4;
  static constexpr int max_array_depth = 8;
  /// Values in nested arrays, all together (each costs far more in memory than in the file).
  static constexpr std::size_t max_nested_values = 1 << 20;
  static constexpr std::uint32_t max_alignment = 1 << 16;
};

/// A validated, memory-mapped GGUF file.
class gguf_file {
 public:
  /// Maps and validates `path`.
  static result<gguf_file> try_open(const std::filesystem::path& path, file_load load = file_load::map);
  /// Maps `path` and, when it is the first part of a split file (llama.cpp's gguf-split:
  /// NAME-00001-of-0000N.gguf, split.count > 1), every other part beside it, joined into
  /// one: the first part's metadata, every part's tensors. A missing part, a part of
  /// another split, or another part than the first is an error that says which.
  static result<gguf_file> try_open_all_parts(const std::filesystem::path& path, file_load load = file_load::map);
  /// Validates bytes that `owner` keeps alive (tests, fuzzing); `source` names them in errors.
  static result<gguf_file> try_parse(std::span<const std::byte> bytes, std::shared_ptr<const void> owner,
                                     std::string source);

  std::uint32_t version() const { return version_; }
  std::uint32_t alignment() const { return alignment_; }
  std::uint64_t data_offset() const { return data_offset_; }
  const std::string& source() const { return source_; }

  /// Metadata in file order.
  const std::vector<std::pair<std::string_view, gguf_value>>& metadata() const { return metadata_; }
  const gguf_value* find(std::string_view key) const;
  /// Tensors in file order.
  const std::vector<gguf_tensor_info>& tensors() const { return tensors_; }
  const gguf_tensor_info* find_tensor(std::string_view name) const;

  /// A tensor as a [rows x cols] matrix sharing the mapping (rows = product of ne[1..]).
  result<weight_tensor> try_matrix(const gguf_tensor_info& info) const;
  /// A tensor's values as fp32 (norms, biases: small tensors).
  result<std::vector<float>> try_values_f32(const gguf_tensor_info& info) const;

 private:
  friend class gguf_parser;
  std::shared_ptr<const void> owner_;
  std::span<const std::byte> bytes_;
  std::string source_;
  std::uint32_t version_ = 0;
  std::uint32_t alignment_ = 32;
  std::uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string_view, gguf_value>> metadata_;
  std::vector<std::size_t> metadata_by_key_;   ///< indices of metadata_, sorted by key
  std::vector<gguf_tensor_info> tensors_;
  std::vector<std::size_t> tensors_by_name_;   ///< indices of tensors_, sorted by name
};

}  // namespace inflight

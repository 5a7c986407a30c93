#pragma once
/// Reader and writer for the safetensors format, single file or sharded.
///
///   | u64 LE: N | N bytes of JSON header | data ...                          |
///   header: {"name": {"dtype": "BF16", "shape": [r, c], "data_offsets": [b, e]},
///            "__metadata__": {"key": "value"}}
///   offsets are relative to the first data byte; e - b == product(shape) * dtype size.
///
/// Every header field is checked against the file before any tensor byte is read, so
/// a damaged file gives errc::corrupt_file naming the file (and tensor), never an
/// out-of-bounds read.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/mapped_file.hpp"

namespace inflight {

/// The element types the format defines.
enum class tensor_dtype { f64, f32, f16, bf16, f8_e5m2, f8_e4m3, i64, i32, i16, i8, u64, u32, u16, u8, boolean };

/// The header spelling ("F32", "BF16", ...).
const char* to_string(tensor_dtype dtype);
/// Parses a header spelling; nullopt for names the format does not define.
std::optional<tensor_dtype> try_parse_dtype(std::string_view name);
std::size_t dtype_size(tensor_dtype dtype);

/// One tensor of a safetensors file: its header entry and its bytes in the mapping.
struct tensor_view {
  std::string name;
  tensor_dtype dtype = tensor_dtype::f32;
  std::vector<std::int64_t> shape;
  std::span<const std::byte> bytes;  ///< exactly num_elements() * dtype_size(dtype)

  std::int64_t num_elements() const;
};

/// Converts F32, F16 or BF16 elements to fp32 (`out.size()` must equal the element
/// count); errc::unsupported for any other dtype.
result<void> try_convert_to_f32(const tensor_view& tensor, std::span<float> out);

/// One memory-mapped .safetensors file with a validated header.
class safetensors_file {
 public:
  static result<safetensors_file> try_open(const std::filesystem::path& path, file_load load = file_load::map);

  const tensor_view* find(std::string_view name) const;
  const std::map<std::string, tensor_view, std::less<>>& tensors() const { return tensors_; }
  const std::map<std::string, std::string, std::less<>>& metadata() const { return metadata_; }
  const std::filesystem::path& path() const { return file_.path(); }

 private:
  mapped_file file_;
  std::map<std::string, tensor_view, std::less<>> tensors_;
  std::map<std::string, std::string, std::less<>> metadata_;
};

/// The tensors of a model: one file, or shards listed by model.safetensors.index.json.
class tensor_store {
 public:
  /// A folder: model.safetensors.index.json if present, else model.safetensors.
  static result<tensor_store> try_open_folder(const std::filesystem::path& folder, file_load load = file_load::map);
  /// An index ({"weight_map": {"tensor": "shard file"}}); shards are relative to it.
  static result<tensor_store> try_open_index(const std::filesystem::path& index_path, file_load load = file_load::map);
  static result<tensor_store> try_open_file(const std::filesystem::path& path, file_load load = file_load::map);

  const tensor_view* find(std::string_view name) const;
  /// The file a tensor lives in (for error messages); empty when absent.
  std::filesystem::path file_of(std::string_view name) const;
  std::vector<std::string> names() const;
  std::size_t num_files() const { return files_.size(); }

 private:
  std::vector<safetensors_file> files_;
  std::map<std::string, std::size_t, std::less<>> file_index_;  ///< tensor -> files_ index
};

/// A tensor to write: fp32 values stored as `dtype` (F32, F16 or BF16).
struct tensor_to_write {
  std::string name;
  std::vector<std::int64_t> shape;
  std::span<const float> values;
  tensor_dtype dtype = tensor_dtype::f32;
};

/// Writes one .safetensors file (header padded to 8 bytes, tensors in the given order).
result<void> try_write_safetensors(const std::filesystem::path& path,
                                   std::span<const tensor_to_write> tensors,
                                   const std::map<std::string, std::string>& metadata = {});

}  // namespace inflight

#pragma once
/// Writes GGUF files (version 3, the layout in gguf.hpp): metadata is collected in
/// memory, tensors are referenced (a weight_tensor shares its storage), and try_write
/// streams header, metadata, tensor infos and then each tensor's bytes as they are,
/// each at an offset that is a multiple of the alignment. Nothing is converted: a q4_k
/// matrix is written as Q4_K blocks.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"
#include "core/model/gguf/gguf.hpp"
#include "core/model/weight_tensor.hpp"

namespace inflight {

class gguf_writer {
 public:
  /// `alignment`: a power of two; other than 32 it is written as general.alignment.
  explicit gguf_writer(std::uint32_t alignment = 32);

  // Metadata; setting a key again replaces its value (the key keeps its first position).
  void set_u32(std::string_view key, std::uint32_t value);
  void set_i32(std::string_view key, std::int32_t value);
  void set_u64(std::string_view key, std::uint64_t value);
  void set_f32(std::string_view key, float value);
  void set_bool(std::string_view key, bool value);
  void set_string(std::string_view key, std::string_view value);
  void set_strings(std::string_view key, std::span<const std::string> values);
  void set_f32s(std::string_view key, std::span<const float> values);
  void set_i32s(std::string_view key, std::span<const std::int32_t> values);
  /// A value already encoded as GGUF writes it after the type id (for types not above).
  void set_raw(std::string_view key, gguf_type type, std::string encoded_value);

  /// A matrix as it is stored: [rows x cols] becomes ne = {cols, rows}.
  /// errc::invalid_argument for an empty tensor, a name over 64 bytes or a repeated name.
  result<void> try_add_matrix(std::string name, weight_tensor tensor);
  /// `num_stacked` matrices of rows / num_stacked rows each, stored as one tensor:
  /// [rows x cols] becomes ne = {cols, rows / num_stacked, num_stacked} (experts).
  result<void> try_add_stacked(std::string name, weight_tensor tensor, std::int64_t num_stacked);
  /// A one-dimensional f32 tensor (norms, biases, rope factors).
  result<void> try_add_vector(std::string name, std::span<const float> values);

  std::size_t num_tensors() const { return tensors_.size(); }
  /// The bytes try_write writes.
  std::uint64_t file_size() const;

  /// Writes the file (through `path` + ".part", renamed when complete).
  result<void> try_write(const std::filesystem::path& path) const;
  /// Writes the file as llama.cpp's gguf-split does: PREFIX-00001-of-0000N.gguf holding
  /// the metadata and the first `max_tensors` tensors, each further part the next ones,
  /// every part with split.no / split.count / split.tensors.count. The paths, in order.
  result<std::vector<std::filesystem::path>> try_write_split(const std::string& prefix, std::size_t max_tensors) const;

 private:
  struct entry {
    std::string key;
    gguf_type type;
    std::string value;  ///< encoded
  };
  struct tensor_entry {
    std::string name;
    std::vector<std::int64_t> ne;
    weight_tensor tensor;
    std::uint64_t offset = 0;
  };
  result<void> try_add(std::string name, std::vector<std::int64_t> ne, weight_tensor tensor);
  std::string encode_head() const;

  std::uint32_t alignment_;
  std::vector<entry> metadata_;
  std::vector<tensor_entry> tensors_;
  std::uint64_t data_bytes_ = 0;
};

}  // namespace inflight

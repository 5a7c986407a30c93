#include "core/model/gguf/gguf.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>

#include "core/base/mapped_file.hpp"

namespace inflight {

/// Reads a GGUF file front to back; each read checks the bytes it needs are there.
class gguf_parser {
 public:
  gguf_parser(std::span<const std::byte> bytes, const std::string& source) : bytes_(bytes), source_(source) {}

  result<void> try_parse(gguf_file& file) {
    if (auto ok = try_read_header(file); !ok) return ok;
    if (auto ok = try_read_metadata(file); !ok) return ok;
    if (auto ok = try_read_alignment(file); !ok) return ok;
    if (auto ok = try_read_tensor_infos(file); !ok) return ok;
    return try_place_tensors(file);
  }

 private:
  std::unexpected<error> corrupt(const std::string& what) const {
    return make_error(errc::corrupt_file, "corrupt GGUF file '" + source_ + "': " + what);
  }
  std::unexpected<error> truncated(const std::string& what) const {
    return corrupt("the file ends inside " + what + " (offset " + std::to_string(pos_) + " of " +
                   std::to_string(bytes_.size()) + " bytes)");
  }
  std::size_t num_left() const { return bytes_.size() - pos_; }

  template <class T>
  result<T> try_read(const std::string& what) {
    if (num_left() < sizeof(T)) return truncated(what);
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }

  result<std::string_view> try_read_string(const std::string& what) {
    auto length = try_read<std::uint64_t>("the length of " + what);
    if (!length) return std::unexpected(length.error());
    if (*length > num_left()) {
      return corrupt(what + " has length " + std::to_string(*length) + " but only " + std::to_string(num_left()) +
                     " bytes follow");
    }
    std::string_view text(reinterpret_cast<const char*>(bytes_.data() + pos_), std::size_t(*length));
    pos_ += std::size_t(*length);
    return text;
  }

  result<gguf_type> try_read_type(const std::string& what) {
    auto id = try_read<std::uint32_t>("the type of " + what);
    if (!id) return std::unexpected(id.error());
    if (*id >= num_gguf_types) return corrupt(what + " has unknown value type " + std::to_string(*id));
    return gguf_type(*id);
  }

  result<void> try_read_header(gguf_file& file) {
    if (bytes_.size() < 4 || std::memcmp(bytes_.data(), "GGUF", 4) != 0) {
      return corrupt("no GGUF magic (the file does not start with \"GGUF\")");
    }
    pos_ = 4;
    auto version = try_read<std::uint32_t>("the header");
    if (!version) return std::unexpected(version.error());
    if (*version != 2 && *version != 3) {
      const auto swapped = std::byteswap(*version);
      if (swapped >= 1 && swapped <= 3) return corrupt("big-endian GGUF files are not supported");
      if (*version == 1) return corrupt("GGUF version 1 is not supported (only versions 2 and 3)");
      return corrupt("unknown GGUF version " + std::to_string(*version) + " (supported: 2 and 3)");
    }
    file.version_ = *version;
    auto num_tensors = try_read<std::uint64_t>("the header");
    if (!num_tensors) return std::unexpected(num_tensors.error());
    auto num_kv = try_read<std::uint64_t>("the header");
    if (!num_kv) return std::unexpected(num_kv.error());
    num_tensors_ = *num_tensors;
    num_kv_ = *num_kv;
    return {};
  }

  result<void> try_read_metadata(gguf_file& file) {
    // A key-value pair takes at least 13 bytes (key length, type, one byte of value).
    if (num_kv_ > num_left() / 13) {
      return corrupt("the header announces " + std::to_string(num_kv_) + " metadata entries but only " +
                     std::to_string(num_left()) + " bytes follow");
    }
    file.metadata_.reserve(std::size_t(num_kv_));
    for (std::uint64_t i = 0; i < num_kv_; ++i) {
      const std::string what = "metadata entry " + std::to_string(i);
      auto key = try_read_string("the key of " + what);
      if (!key) return std::unexpected(key.error());
      if (key->size() > gguf_limits::max_key_bytes) return corrupt(what + " has a key of " + std::to_string(key->size()) + " bytes");
      const std::string name = "metadata '" + std::string(*key) + "'";
      auto type = try_read_type(name);
      if (!type) return std::unexpected(type.error());
      auto value = try_read_value(*type, name, 0);
      if (!value) return std::unexpected(value.error());
      file.metadata_.emplace_back(*key, std::move(*value));
    }
    file.metadata_by_key_.resize(file.metadata_.size());
    for (std::size_t i = 0; i < file.metadata_.size(); ++i) file.metadata_by_key_[i] = i;
    const auto key_of = [&](std::size_t i) { return file.metadata_[i].first; };
    std::stable_sort(file.metadata_by_key_.begin(), file.metadata_by_key_.end(),
                     [&](std::size_t a, std::size_t b) { return key_of(a) < key_of(b); });
    const auto dup = std::adjacent_find(file.metadata_by_key_.begin(), file.metadata_by_key_.end(),
                                        [&](std::size_t a, std::size_t b) { return key_of(a) == key_of(b); });
    if (dup != file.metadata_by_key_.end()) return corrupt("metadata key '" + std::string(key_of(*dup)) + "' appears twice");
    return {};
  }

  result<gguf_value> try_read_value(gguf_type type, const std::string& what, int depth) {
    gguf_value value;
    value.type_ = type;
    if (type == gguf_type::string) {
      auto text = try_read_string(what);
      if (!text) return std::unexpected(text.error());
      value.text_ = *text;
    } else if (type == gguf_type::array) {
      auto array = try_read_array(what, depth);
      if (!array) return std::unexpected(array.error());
      value.array_ = std::move(*array);
    } else {
      const std::size_t size = fixed_size_of(type);
      if (num_left() < size) return truncated("the value of " + what);
      std::memcpy(&value.bits_, bytes_.data() + pos_, size);
      pos_ += size;
    }
    return value;
  }

  result<std::shared_ptr<const gguf_array>> try_read_array(const std::string& what, int depth) {
    if (depth >= gguf_limits::max_array_depth) {
      return corrupt(what + " nests arrays deeper than " + std::to_string(gguf_limits::max_array_depth) + " levels");
    }
    auto element_type = try_read_type("the elements of " + what);
    if (!element_type) return std::unexpected(element_type.error());
    auto count = try_read<std::uint64_t>("the length of " + what);
    if (!count) return std::unexpected(count.error());
    const std::size_t fixed = fixed_size_of(*element_type);
    // The least an element takes: its bytes, a string's length, a nested array's type and count.
    const std::size_t min_bytes = fixed > 0 ? fixed : *element_type == gguf_type::string ? 8 : 12;
    if (*count > num_left() / min_bytes) {
      return corrupt(what + " has " + std::to_string(*count) + " elements of type " + to_string(*element_type) +
                     " but only " + std::to_string(num_left()) + " bytes follow");
    }
    auto array = std::make_shared<gguf_array>();
    array->element_type = *element_type;
    array->count = std::size_t(*count);
    if (fixed > 0) {
      array->raw = bytes_.subspan(pos_, array->count * fixed);
      pos_ += array->count * fixed;
    } else if (*element_type == gguf_type::string) {
      if (auto ok = try_read_strings(*array, what); !ok) return std::unexpected(ok.error());
    } else {
      if (auto ok = try_read_nested(*array, what, depth); !ok) return std::unexpected(ok.error());
    }
    return array;
  }

  result<void> try_read_strings(gguf_array& array, const std::string& what) {
    array.strings.reserve(array.count);
    for (std::size_t i = 0; i < array.count; ++i) {
      auto text = try_read_string("element " + std::to_string(i) + " of " + what);
      if (!text) return std::unexpected(text.error());
      array.strings.push_back(*text);
    }
    return {};
  }

  result<void> try_read_nested(gguf_array& array, const std::string& what, int depth) {
    num_nested_values_ += array.count;
    if (num_nested_values_ > gguf_limits::max_nested_values) {
      return corrupt(what + ": nested arrays hold more than " + std::to_string(gguf_limits::max_nested_values) +
                     " values in all");
    }
    array.arrays.reserve(array.count);
    for (std::size_t i = 0; i < array.count; ++i) {
      auto item = try_read_value(gguf_type::array, "element " + std::to_string(i) + " of " + what, depth + 1);
      if (!item) return std::unexpected(item.error());
      array.arrays.push_back(std::move(*item));
    }
    return {};
  }

  result<void> try_read_alignment(gguf_file& file) {
    const gguf_value* value = file.find("general.alignment");
    if (value == nullptr) return {};
    const auto alignment = value->as_int();
    if (value->type() != gguf_type::u32 || *alignment == 0 || !std::has_single_bit(std::uint64_t(*alignment)) ||
        *alignment > gguf_limits::max_alignment) {
      return corrupt("general.alignment must be a u32 power of two up to " +
                     std::to_string(gguf_limits::max_alignment) + ", found a " + to_string(value->type()) +
                     (alignment ? " " + std::to_string(*alignment) : std::string()));
    }
    file.alignment_ = std::uint32_t(*alignment);
    return {};
  }

  result<void> try_read_tensor_infos(gguf_file& file);
  result<void> try_read_tensor_info(gguf_tensor_info& info, std::uint64_t index, std::uint32_t alignment);
  result<void> try_read_dims(gguf_tensor_info& info, const std::string& what);
  result<void> try_place_tensors(gguf_file& file);

  std::span<const std::byte> bytes_;
  const std::string& source_;
  std::size_t pos_ = 0;
  std::uint64_t num_tensors_ = 0;
  std::uint64_t num_kv_ = 0;
  std::size_t num_nested_values_ = 0;
};

namespace {

std::uint64_t align_up(std::uint64_t offset, std::uint32_t alignment) {
  return (offset + alignment - 1) / alignment * alignment;
}

}  // namespace

result<void> gguf_parser::try_read_tensor_infos(gguf_file& file) {
  // An entry takes at least 32 bytes (name length, dimension count, one dimension, type, offset).
  if (num_tensors_ > num_left() / 32) {
    return corrupt("the header announces " + std::to_string(num_tensors_) + " tensors but only " +
                   std::to_string(num_left()) + " bytes follow the metadata");
  }
  file.tensors_.resize(std::size_t(num_tensors_));
  for (std::uint64_t i = 0; i < num_tensors_; ++i) {
    if (auto ok = try_read_tensor_info(file.tensors_[std::size_t(i)], i, file.alignment_); !ok) return ok;
  }
  file.data_offset_ = num_tensors_ > 0 ? align_up(pos_, file.alignment_) : pos_;
  if (file.data_offset_ > bytes_.size()) {
    return corrupt("the data section would start at offset " + std::to_string(file.data_offset_) +
                   ", past the end of the file (" + std::to_string(bytes_.size()) + " bytes)");
  }
  return {};
}

result<void> gguf_parser::try_read_tensor_info(gguf_tensor_info& info, std::uint64_t index, std::uint32_t alignment) {
  auto name = try_read_string("the name of tensor " + std::to_string(index));
  if (!name) return std::unexpected(name.error());
  info.name = *name;
  const std::string what = "tensor '" + std::string(info.name) + "'";
  if (info.name.size() > gguf_limits::max_name_bytes) {
    return corrupt("the name of tensor " + std::to_string(index) + " is " + std::to_string(info.name.size()) +
                   " bytes long (at most " + std::to_string(gguf_limits::max_name_bytes) + ")");
  }
  if (auto ok = try_read_dims(info, what); !ok) return ok;
  auto type = try_read<std::uint32_t>("the type of " + what);
  if (!type) return std::unexpected(type.error());
  info.ggml_type = *type;
  const auto dtype = weight_dtype_of_ggml(*type);
  if (!dtype) {
    return make_error(errc::unsupported, "GGUF file '" + source_ + "': " + what + " has type " +
                                             ggml_type_name(*type) + ", which inflight does not read (it reads " +
                                             "F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K)");
  }
  info.dtype = *dtype;
  auto offset = try_read<std::uint64_t>("the offset of " + what);
  if (!offset) return std::unexpected(offset.error());
  info.offset = *offset;
  if (info.offset % alignment != 0) {
    return corrupt(what + " has offset " + std::to_string(info.offset) + ", not a multiple of the alignment " +
                   std::to_string(alignment));
  }
  return {};
}

result<void> gguf_parser::try_read_dims(gguf_tensor_info& info, const std::string& what) {
  auto num_dims = try_read<std::uint32_t>("the dimension count of " + what);
  if (!num_dims) return std::unexpected(num_dims.error());
  if (*num_dims < 1 || *num_dims > std::uint32_t(gguf_limits::max_dims)) {
    return corrupt(what + " has " + std::to_string(*num_dims) + " dimensions (1 to " +
                   std::to_string(gguf_limits::max_dims) + " are allowed)");
  }
  std::int64_t num_values = 1;  // of the non-zero extents, so that any product of them is bounded
  for (std::uint32_t d = 0; d < *num_dims; ++d) {
    auto extent = try_read<std::uint64_t>("the dimensions of " + what);
    if (!extent) return std::unexpected(extent.error());
    // No tensor a file can hold has 2^60 values; the bound keeps every byte count (at most
    // 4 bytes a value) below overflow.
    const auto factor = std::int64_t(std::max<std::uint64_t>(*extent, 1));
    if (*extent > (std::uint64_t(1) << 60) || __builtin_mul_overflow(num_values, factor, &num_values) ||
        num_values > (std::int64_t(1) << 60)) {
      return corrupt(what + " has a dimension of " + std::to_string(*extent) + ": too many values");
    }
    info.ne.push_back(std::int64_t(*extent));
  }
  return {};
}

result<void> gguf_parser::try_place_tensors(gguf_file& file) {
  const std::uint64_t data_bytes = bytes_.size() - file.data_offset_;
  std::vector<std::size_t> by_offset;
  for (std::size_t i = 0; i < file.tensors_.size(); ++i) {
    auto& t = file.tensors_[i];
    const std::string what = "tensor '" + std::string(t.name) + "'";
    std::int64_t num_bytes = 0;
    if (t.rows() > 0 && t.cols() > 0) {
      if (!fits_blocks(t.dtype, t.cols())) {
        return corrupt(what + " has rows of " + std::to_string(t.cols()) + " values, not a whole number of " +
                       ggml_type_name(t.ggml_type) + " blocks of " + std::to_string(layout_of(t.dtype).block_values));
      }
      if (__builtin_mul_overflow(t.rows(), row_bytes(t.dtype, t.cols()), &num_bytes)) return corrupt(what + " is too large");
    }
    if (t.offset > data_bytes || std::uint64_t(num_bytes) > data_bytes - t.offset) {
      return corrupt(what + " (" + std::to_string(num_bytes) + " bytes at data offset " + std::to_string(t.offset) +
                     ") does not fit in the " + std::to_string(data_bytes) + " bytes of the data section");
    }
    t.bytes = bytes_.subspan(std::size_t(file.data_offset_ + t.offset), std::size_t(num_bytes));
    if (num_bytes > 0) by_offset.push_back(i);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [&](std::size_t a, std::size_t b) { return file.tensors_[a].offset < file.tensors_[b].offset; });
  for (std::size_t k = 1; k < by_offset.size(); ++k) {
    const auto& prev = file.tensors_[by_offset[k - 1]];
    const auto& next = file.tensors_[by_offset[k]];
    if (prev.offset + prev.bytes.size() > next.offset) {
      return corrupt("tensors '" + std::string(prev.name) + "' and '" + std::string(next.name) + "' overlap");
    }
  }
  file.tensors_by_name_.resize(file.tensors_.size());
  for (std::size_t i = 0; i < file.tensors_.size(); ++i) file.tensors_by_name_[i] = i;
  const auto name_of = [&](std::size_t i) { return file.tensors_[i].name; };
  std::stable_sort(file.tensors_by_name_.begin(), file.tensors_by_name_.end(),
                   [&](std::size_t a, std::size_t b) { return name_of(a) < name_of(b); });
  const auto dup = std::adjacent_find(file.tensors_by_name_.begin(), file.tensors_by_name_.end(),
                                      [&](std::size_t a, std::size_t b) { return name_of(a) == name_of(b); });
  if (dup != file.tensors_by_name_.end()) return corrupt("tensor '" + std::string(name_of(*dup)) + "' appears twice");
  return {};
}

result<gguf_file> gguf_file::try_parse(std::span<const std::byte> bytes, std::shared_ptr<const void> owner,
                                       std::string source) {
  gguf_file file;
  file.owner_ = std::move(owner);
  file.bytes_ = bytes;
  file.source_ = std::move(source);
  gguf_parser parser(bytes, file.source_);
  if (auto ok = parser.try_parse(file); !ok) return std::unexpected(ok.error());
  return file;
}

result<gguf_file> gguf_file::try_open(const std::filesystem::path& path, file_load load) {
  auto mapped = mapped_file::try_open(path, load);
  if (!mapped) return std::unexpected(mapped.error());
  auto shared = std::make_shared<const mapped_file>(std::move(*mapped));
  const auto bytes = shared->bytes();
  return try_parse(bytes, std::move(shared), path.string());
}

namespace {

/// The path of part `k` (1-based) of a split of `count` parts, named as llama.cpp names them.
std::filesystem::path split_part_path(const std::string& prefix, int k, int count) {
  char tail[40];
  std::snprintf(tail, sizeof tail, "-%05d-of-%05d.gguf", k, count);
  return prefix + tail;
}

}  // namespace

result<gguf_file> gguf_file::try_open_all_parts(const std::filesystem::path& path, file_load load) {
  auto first = try_open(path, load);
  if (!first) return first;
  const gguf_value* count_value = first->find("split.count");
  const int count = count_value ? int(count_value->as_int().value_or(1)) : 1;
  if (count <= 1) return first;
  const auto fail = [&](const std::string& why) {
    return make_error(errc::corrupt_file, "GGUF file '" + path.string() + "' (part 1 of a split of " +
                                              std::to_string(count) + "): " + why);
  };
  const std::string name = path.string();
  const std::string suffix = split_part_path("", 1, count).string();
  const gguf_value* no = first->find("split.no");
  if (no != nullptr && no->as_int().value_or(0) != 0)
    return make_error(errc::invalid_argument, "GGUF file '" + name + "' is part " +
                                                  std::to_string(no->as_int().value_or(0) + 1) + " of " +
                                                  std::to_string(count) + " of a split file: give the first part (its "
                                                  "name ends in " + suffix + ")");
  if (!name.ends_with(suffix)) return fail("its name does not end in " + suffix + ", so its other parts cannot be found");
  const std::string prefix = name.substr(0, name.size() - suffix.size());
  std::vector<std::shared_ptr<const void>> owners{first->owner_};
  gguf_file joined = std::move(*first);
  for (int k = 2; k <= count; ++k) {
    const auto part_path = split_part_path(prefix, k, count);
    if (!std::filesystem::exists(part_path)) return fail("part " + std::to_string(k) + " is missing: " + part_path.string());
    auto part = try_open(part_path, load);
    if (!part) return std::unexpected(part.error());
    const gguf_value* part_count = part->find("split.count");
    const gguf_value* part_no = part->find("split.no");
    if (part_count == nullptr || part_count->as_int().value_or(0) != count || part_no == nullptr ||
        part_no->as_int().value_or(-1) != k - 1)
      return fail(part_path.string() + " is not part " + std::to_string(k) + " of " + std::to_string(count) +
                  " (its split.no / split.count say otherwise)");
    owners.push_back(part->owner_);
    for (auto& t : part->tensors_) joined.tensors_.push_back(std::move(t));
  }
  if (const gguf_value* total = joined.find("split.tensors.count"); total != nullptr &&
                                                                      total->as_int().value_or(-1) != std::int64_t(joined.tensors_.size()))
    return fail("the parts hold " + std::to_string(joined.tensors_.size()) + " tensors; split.tensors.count says " +
                std::to_string(total->as_int().value_or(-1)));
  joined.owner_ = std::make_shared<const std::vector<std::shared_ptr<const void>>>(std::move(owners));
  joined.tensors_by_name_.resize(joined.tensors_.size());
  for (std::size_t i = 0; i < joined.tensors_.size(); ++i) joined.tensors_by_name_[i] = i;
  const auto name_of = [&](std::size_t i) { return joined.tensors_[i].name; };
  std::stable_sort(joined.tensors_by_name_.begin(), joined.tensors_by_name_.end(),
                   [&](std::size_t a, std::size_t b) { return name_of(a) < name_of(b); });
  const auto dup = std::adjacent_find(joined.tensors_by_name_.begin(), joined.tensors_by_name_.end(),
                                      [&](std::size_t a, std::size_t b) { return name_of(a) == name_of(b); });
  if (dup != joined.tensors_by_name_.end()) return fail("tensor '" + std::string(name_of(*dup)) + "' is in two parts");
  joined.source_ = name + " (+" + std::to_string(count - 1) + " parts)";
  return joined;
}

const gguf_value* gguf_file::find(std::string_view key) const {
  const auto it = std::lower_bound(metadata_by_key_.begin(), metadata_by_key_.end(), key,
                                   [&](std::size_t i, std::string_view k) { return metadata_[i].first < k; });
  if (it == metadata_by_key_.end() || metadata_[*it].first != key) return nullptr;
  return &metadata_[*it].second;
}

const gguf_tensor_info* gguf_file::find_tensor(std::string_view name) const {
  const auto it = std::lower_bound(tensors_by_name_.begin(), tensors_by_name_.end(), name,
                                   [&](std::size_t i, std::string_view n) { return tensors_[i].name < n; });
  if (it == tensors_by_name_.end() || tensors_[*it].name != name) return nullptr;
  return &tensors_[*it];
}

result<weight_tensor> gguf_file::try_matrix(const gguf_tensor_info& info) const {
  auto tensor = weight_tensor::try_view(info.dtype, info.rows(), info.cols(), info.bytes, owner_);
  if (!tensor) return make_error(errc::corrupt_file, source_ + ": tensor '" + std::string(info.name) + "': " +
                                                         tensor.error().message);
  return tensor;
}

result<std::vector<float>> gguf_file::try_values_f32(const gguf_tensor_info& info) const {
  auto matrix = try_matrix(info);
  if (!matrix) return std::unexpected(matrix.error());
  auto values = try_to_f32(*matrix);
  if (!values) return make_error(values.error().code, source_ + ": tensor '" + std::string(info.name) + "': " +
                                                          values.error().message);
  return values;
}

}  // namespace inflight

#include "core/model/formats/safetensors.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/base/json_depth.hpp"
#include "dtypes/half.hpp"

namespace inflight {

namespace {

using json = nlohmann::json;

// The reference implementation refuses headers above 100 MB; so do we, before parsing.
constexpr std::uint64_t max_header_bytes = 100'000'000;

struct dtype_entry {
  tensor_dtype dtype;
  const char* name;
  std::size_t size;
};

constexpr std::array<dtype_entry, 15> dtype_table{{
    {tensor_dtype::f64, "F64", 8},         {tensor_dtype::f32, "F32", 4},
    {tensor_dtype::f16, "F16", 2},         {tensor_dtype::bf16, "BF16", 2},
    {tensor_dtype::f8_e5m2, "F8_E5M2", 1}, {tensor_dtype::f8_e4m3, "F8_E4M3", 1},
    {tensor_dtype::i64, "I64", 8},         {tensor_dtype::i32, "I32", 4},
    {tensor_dtype::i16, "I16", 2},         {tensor_dtype::i8, "I8", 1},
    {tensor_dtype::u64, "U64", 8},         {tensor_dtype::u32, "U32", 4},
    {tensor_dtype::u16, "U16", 2},         {tensor_dtype::u8, "U8", 1},
    {tensor_dtype::boolean, "BOOL", 1},
}};

const dtype_entry& entry_of(tensor_dtype dtype) {
  for (const auto& entry : dtype_table) {
    if (entry.dtype == dtype) return entry;
  }
  return dtype_table[1];
}

std::uint64_t read_u64_le(const std::byte* p) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | std::uint64_t(p[i]);
  return value;
}

std::unexpected<error> corrupt(const std::filesystem::path& path, const std::string& what) {
  return make_error(errc::corrupt_file, "corrupt safetensors file '" + path.string() + "': " + what);
}

std::unexpected<error> corrupt_tensor(const std::filesystem::path& path, std::string_view name,
                                      const std::string& what) {
  return corrupt(path, "tensor '" + std::string(name) + "' " + what);
}

// A non-negative JSON integer, or nullopt (negative, fractional, not a number).
std::optional<std::uint64_t> as_unsigned(const json& value) {
  if (!value.is_number_unsigned()) return std::nullopt;
  return value.get<std::uint64_t>();
}

}  // namespace

const char* to_string(tensor_dtype dtype) { return entry_of(dtype).name; }

std::optional<tensor_dtype> try_parse_dtype(std::string_view name) {
  for (const auto& entry : dtype_table) {
    if (name == entry.name) return entry.dtype;
  }
  return std::nullopt;
}

std::size_t dtype_size(tensor_dtype dtype) { return entry_of(dtype).size; }

std::int64_t tensor_view::num_elements() const {
  return std::int64_t(bytes.size() / dtype_size(dtype));
}

result<void> try_convert_to_f32(const tensor_view& tensor, std::span<float> out) {
  const std::size_t count = tensor.bytes.size() / dtype_size(tensor.dtype);
  if (out.size() != count) {
    return make_error(errc::invalid_argument, "tensor '" + tensor.name + "' has " +
                                                  std::to_string(count) + " elements, buffer holds " +
                                                  std::to_string(out.size()));
  }
  const std::byte* src = tensor.bytes.data();
  switch (tensor.dtype) {
    case tensor_dtype::f32:
      if (count > 0) std::memcpy(out.data(), src, count * sizeof(float));
      return {};
    case tensor_dtype::bf16:
    case tensor_dtype::f16: {
      const bool is_bf16 = tensor.dtype == tensor_dtype::bf16;
      for (std::size_t i = 0; i < count; ++i) {
        std::uint16_t bits;  // memcpy: the data need not be 2-byte aligned
        std::memcpy(&bits, src + 2 * i, sizeof bits);
        out[i] = is_bf16 ? bf16_to_float(bits) : fp16_to_float(bits);
      }
      return {};
    }
    default:
      return make_error(errc::unsupported, "tensor '" + tensor.name + "' has dtype " +
                                               to_string(tensor.dtype) +
                                               "; only F32, F16 and BF16 convert to fp32");
  }
}

namespace {

// Parses one header entry and checks it against the data section.
result<tensor_view> parse_tensor_entry(const std::filesystem::path& path, const std::string& name,
                                       const json& entry, std::span<const std::byte> data) {
  if (!entry.is_object()) return corrupt_tensor(path, name, "has a header entry that is not an object");
  const auto dtype_it = entry.find("dtype");
  const auto shape_it = entry.find("shape");
  const auto offsets_it = entry.find("data_offsets");
  if (dtype_it == entry.end() || !dtype_it->is_string()) {
    return corrupt_tensor(path, name, "has no dtype string");
  }
  const auto dtype = try_parse_dtype(dtype_it->get<std::string>());
  if (!dtype) return corrupt_tensor(path, name, "has unknown dtype '" + dtype_it->get<std::string>() + "'");
  if (shape_it == entry.end() || !shape_it->is_array()) {
    return corrupt_tensor(path, name, "has no shape array");
  }
  tensor_view view{name, *dtype, {}, {}};
  std::uint64_t num_bytes = dtype_size(*dtype);
  for (const auto& dim : *shape_it) {
    const auto extent = as_unsigned(dim);
    if (!extent || *extent > std::uint64_t(INT64_MAX)) {
      return corrupt_tensor(path, name, "has an invalid shape " + shape_it->dump());
    }
    if (__builtin_mul_overflow(num_bytes, *extent, &num_bytes)) {
      return corrupt_tensor(path, name, "has a shape too large to address " + shape_it->dump());
    }
    view.shape.push_back(std::int64_t(*extent));
  }
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
    return corrupt_tensor(path, name, "has no [begin, end] data_offsets");
  }
  const auto begin = as_unsigned((*offsets_it)[0]);
  const auto end = as_unsigned((*offsets_it)[1]);
  if (!begin || !end || *begin > *end) {
    return corrupt_tensor(path, name, "has invalid data_offsets " + offsets_it->dump());
  }
  if (*end > data.size()) {
    return corrupt_tensor(path, name, "has data_offsets " + offsets_it->dump() +
                                          " past the end of the data (" + std::to_string(data.size()) +
                                          " bytes)");
  }
  if (*end - *begin != num_bytes) {
    return corrupt_tensor(path, name, "spans " + std::to_string(*end - *begin) + " bytes but " +
                                          to_string(*dtype) + " shape " + shape_it->dump() + " needs " +
                                          std::to_string(num_bytes));
  }
  view.bytes = data.subspan(*begin, *end - *begin);
  return view;
}

result<void> parse_metadata(const std::filesystem::path& path, const json& value,
                            std::map<std::string, std::string, std::less<>>& out) {
  if (!value.is_object()) return corrupt(path, "__metadata__ is not an object");
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) return corrupt(path, "__metadata__ value '" + key + "' is not a string");
    out.emplace(key, item.get<std::string>());
  }
  return {};
}

// Tensors may not share bytes; zero-sized tensors occupy nothing.
result<void> check_no_overlap(const std::filesystem::path& path,
                              const std::map<std::string, tensor_view, std::less<>>& tensors) {
  std::vector<const tensor_view*> sorted;
  for (const auto& [name, view] : tensors) {
    if (!view.bytes.empty()) sorted.push_back(&view);
  }
  std::sort(sorted.begin(), sorted.end(), [](const tensor_view* a, const tensor_view* b) {
    return a->bytes.data() < b->bytes.data();
  });
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    const auto& previous = sorted[i - 1]->bytes;
    if (sorted[i]->bytes.data() < previous.data() + previous.size()) {
      return corrupt_tensor(path, sorted[i]->name, "overlaps tensor '" + sorted[i - 1]->name + "'");
    }
  }
  return {};
}

}  // namespace

result<safetensors_file> safetensors_file::try_open(const std::filesystem::path& path, file_load load) {
  auto mapped = mapped_file::try_open(path, load);
  if (!mapped) return std::unexpected(std::move(mapped.error()));
  safetensors_file file;
  file.file_ = std::move(*mapped);
  const auto bytes = file.file_.bytes();
  if (bytes.size() < 8) {
    return corrupt(path, "file is " + std::to_string(bytes.size()) +
                             " bytes, too short for the 8-byte header length");
  }
  const std::uint64_t header_size = read_u64_le(bytes.data());
  if (header_size > bytes.size() - 8) {
    return corrupt(path, "header length " + std::to_string(header_size) + " exceeds the file (" +
                             std::to_string(bytes.size()) + " bytes)");
  }
  if (header_size > max_header_bytes) {
    return corrupt(path, "header length " + std::to_string(header_size) + " exceeds the 100 MB limit");
  }
  const auto* header_begin = reinterpret_cast<const char*>(bytes.data() + 8);
  if (json_nests_deeper_than({header_begin, header_size})) {
    return corrupt(path, "header nests deeper than " + std::to_string(max_json_depth) + " levels");
  }
  const json header = json::parse(header_begin, header_begin + header_size, nullptr, false);
  if (header.is_discarded()) return corrupt(path, "header is not valid JSON");
  if (!header.is_object()) return corrupt(path, "header is not a JSON object");
  const auto data = bytes.subspan(8 + header_size);
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (auto ok = parse_metadata(path, entry, file.metadata_); !ok) return std::unexpected(ok.error());
      continue;
    }
    auto view = parse_tensor_entry(path, name, entry, data);
    if (!view) return std::unexpected(std::move(view.error()));
    file.tensors_.emplace(name, std::move(*view));
  }
  if (auto ok = check_no_overlap(path, file.tensors_); !ok) return std::unexpected(ok.error());
  return file;
}

const tensor_view* safetensors_file::find(std::string_view name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

namespace {

// A shard name must stay inside the model folder.
bool is_safe_shard_name(const std::string& name) {
  const std::filesystem::path shard(name);
  if (name.empty() || shard.is_absolute()) return false;
  return std::none_of(shard.begin(), shard.end(), [](const auto& part) { return part == ".."; });
}

std::unexpected<error> corrupt_index(const std::filesystem::path& path, const std::string& what) {
  return make_error(errc::corrupt_file, "corrupt safetensors index '" + path.string() + "': " + what);
}

}  // namespace

result<tensor_store> tensor_store::try_open_file(const std::filesystem::path& path, file_load load) {
  auto file = safetensors_file::try_open(path, load);
  if (!file) return std::unexpected(std::move(file.error()));
  tensor_store store;
  for (const auto& [name, view] : file->tensors()) store.file_index_.emplace(name, 0);
  store.files_.push_back(std::move(*file));
  return store;
}

result<tensor_store> tensor_store::try_open_index(const std::filesystem::path& index_path, file_load load) {
  auto mapped = mapped_file::try_open(index_path);
  if (!mapped) return std::unexpected(std::move(mapped.error()));
  const auto* text = reinterpret_cast<const char*>(mapped->bytes().data());
  if (json_nests_deeper_than({text, mapped->size()})) {
    return corrupt_index(index_path, "nests deeper than " + std::to_string(max_json_depth) + " levels");
  }
  const json index = json::parse(text, text + mapped->size(), nullptr, false);
  if (index.is_discarded() || !index.is_object()) return corrupt_index(index_path, "not a JSON object");
  const auto map_it = index.find("weight_map");
  if (map_it == index.end() || !map_it->is_object()) return corrupt_index(index_path, "no weight_map object");
  tensor_store store;
  std::map<std::string, std::size_t> shard_slots;
  for (const auto& [tensor, shard] : map_it->items()) {
    if (!shard.is_string() || !is_safe_shard_name(shard.get<std::string>())) {
      return corrupt_index(index_path, "tensor '" + tensor + "' maps to an invalid shard " + shard.dump());
    }
    const auto shard_name = shard.get<std::string>();
    auto slot = shard_slots.find(shard_name);
    if (slot == shard_slots.end()) {
      auto file = safetensors_file::try_open(index_path.parent_path() / shard_name, load);
      if (!file) return std::unexpected(std::move(file.error()));
      store.files_.push_back(std::move(*file));
      slot = shard_slots.emplace(shard_name, store.files_.size() - 1).first;
    }
    if (store.files_[slot->second].find(tensor) == nullptr) {
      return corrupt_index(index_path, "tensor '" + tensor + "' is not in its shard '" + shard_name + "'");
    }
    store.file_index_.emplace(tensor, slot->second);
  }
  return store;
}

result<tensor_store> tensor_store::try_open_folder(const std::filesystem::path& folder, file_load load) {
  const auto index_path = folder / "model.safetensors.index.json";
  if (std::filesystem::exists(index_path)) return try_open_index(index_path, load);
  const auto single_path = folder / "model.safetensors";
  if (std::filesystem::exists(single_path)) return try_open_file(single_path, load);
  return make_error(errc::not_found, "no model.safetensors or model.safetensors.index.json in '" +
                                         folder.string() + "'");
}

const tensor_view* tensor_store::find(std::string_view name) const {
  const auto it = file_index_.find(name);
  return it == file_index_.end() ? nullptr : files_[it->second].find(name);
}

std::filesystem::path tensor_store::file_of(std::string_view name) const {
  const auto it = file_index_.find(name);
  return it == file_index_.end() ? std::filesystem::path{} : files_[it->second].path();
}

std::vector<std::string> tensor_store::names() const {
  std::vector<std::string> out;
  out.reserve(file_index_.size());
  for (const auto& [name, slot] : file_index_) out.push_back(name);
  return out;
}

namespace {

result<void> check_writable(const tensor_to_write& tensor) {
  if (tensor.dtype != tensor_dtype::f32 && tensor.dtype != tensor_dtype::f16 &&
      tensor.dtype != tensor_dtype::bf16) {
    return make_error(errc::invalid_argument, "tensor '" + tensor.name + "': can only write F32, F16 or BF16");
  }
  std::int64_t count = 1;
  for (const auto extent : tensor.shape) count *= extent;
  if (count != std::int64_t(tensor.values.size())) {
    return make_error(errc::invalid_argument, "tensor '" + tensor.name + "' has " +
                                                  std::to_string(tensor.values.size()) +
                                                  " values for a shape of " + std::to_string(count));
  }
  return {};
}

// Converts in bounded chunks so a large tensor needs no second full-size buffer.
void write_values(std::ostream& out, const tensor_to_write& tensor) {
  if (tensor.dtype == tensor_dtype::f32) {
    out.write(reinterpret_cast<const char*>(tensor.values.data()), std::streamsize(tensor.values.size_bytes()));
    return;
  }
  constexpr std::size_t chunk = 1 << 16;
  std::vector<std::uint16_t> buffer(chunk);
  for (std::size_t start = 0; start < tensor.values.size(); start += chunk) {
    const std::size_t n = std::min(chunk, tensor.values.size() - start);
    for (std::size_t i = 0; i < n; ++i) {
      const float value = tensor.values[start + i];
      buffer[i] = tensor.dtype == tensor_dtype::bf16 ? float_to_bf16(value) : float_to_fp16(value);
    }
    out.write(reinterpret_cast<const char*>(buffer.data()), std::streamsize(n * sizeof(std::uint16_t)));
  }
}

}  // namespace

result<void> try_write_safetensors(const std::filesystem::path& path,
                                   std::span<const tensor_to_write> tensors,
                                   const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto& tensor : tensors) {
    if (auto ok = check_writable(tensor); !ok) return ok;
    if (tensor.name == "__metadata__" || header.contains(tensor.name)) {
      return make_error(errc::invalid_argument, "duplicate or reserved tensor name '" + tensor.name + "'");
    }
    const std::uint64_t num_bytes = tensor.values.size() * dtype_size(tensor.dtype);
    header[tensor.name] = {{"dtype", to_string(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + num_bytes}}};
    offset += num_bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned
  // Write beside the target and rename, so a failed write never leaves a half file.
  auto staging = path;
  staging += ".partial";
  {
    std::ofstream out(staging, std::ios::binary | std::ios::trunc);
    if (!out) return make_error(errc::io_error, "cannot create '" + staging.string() + "'");
    std::array<char, 8> length{};
    for (int i = 0; i < 8; ++i) length[i] = char((std::uint64_t(text.size()) >> (8 * i)) & 0xff);
    out.write(length.data(), length.size());
    out.write(text.data(), std::streamsize(text.size()));
    for (const auto& tensor : tensors) write_values(out, tensor);
    out.flush();
    if (!out) return make_error(errc::io_error, "cannot write '" + staging.string() + "'");
  }
  std::error_code ec;
  std::filesystem::rename(staging, path, ec);
  if (ec) return make_error(errc::io_error, "cannot rename to '" + path.string() + "': " + ec.message());
  return {};
}

}  // namespace inflight

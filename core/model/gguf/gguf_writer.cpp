#include "core/model/gguf/gguf_writer.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace inflight {

namespace {

template <class T>
void append(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void append_string(std::string& out, std::string_view text) {
  append<std::uint64_t>(out, text.size());
  out.append(text);
}

template <class T>
std::string encode_array(gguf_type element_type, std::span<const T> values) {
  std::string out;
  append<std::uint32_t>(out, std::uint32_t(element_type));
  append<std::uint64_t>(out, values.size());
  for (const T& v : values) append<T>(out, v);
  return out;
}

std::uint64_t align_up(std::uint64_t offset, std::uint32_t alignment) {
  return (offset + alignment - 1) / alignment * alignment;
}

}  // namespace

gguf_writer::gguf_writer(std::uint32_t alignment)
    : alignment_(std::has_single_bit(alignment) ? alignment : 32) {
  if (alignment_ != 32) set_u32("general.alignment", alignment_);
}

void gguf_writer::set_raw(std::string_view key, gguf_type type, std::string encoded_value) {
  auto it = std::find_if(metadata_.begin(), metadata_.end(), [&](const entry& e) { return e.key == key; });
  if (it != metadata_.end()) {
    it->type = type;
    it->value = std::move(encoded_value);
    return;
  }
  metadata_.push_back({std::string(key), type, std::move(encoded_value)});
}

void gguf_writer::set_u32(std::string_view key, std::uint32_t value) {
  std::string v;
  append(v, value);
  set_raw(key, gguf_type::u32, std::move(v));
}

void gguf_writer::set_i32(std::string_view key, std::int32_t value) {
  std::string v;
  append(v, value);
  set_raw(key, gguf_type::i32, std::move(v));
}

void gguf_writer::set_u64(std::string_view key, std::uint64_t value) {
  std::string v;
  append(v, value);
  set_raw(key, gguf_type::u64, std::move(v));
}

void gguf_writer::set_f32(std::string_view key, float value) {
  std::string v;
  append(v, value);
  set_raw(key, gguf_type::f32, std::move(v));
}

void gguf_writer::set_bool(std::string_view key, bool value) {
  set_raw(key, gguf_type::boolean, std::string(1, value ? '\1' : '\0'));
}

void gguf_writer::set_string(std::string_view key, std::string_view value) {
  std::string v;
  append_string(v, value);
  set_raw(key, gguf_type::string, std::move(v));
}

void gguf_writer::set_strings(std::string_view key, std::span<const std::string> values) {
  std::string v;
  append<std::uint32_t>(v, std::uint32_t(gguf_type::string));
  append<std::uint64_t>(v, values.size());
  for (const auto& s : values) append_string(v, s);
  set_raw(key, gguf_type::array, std::move(v));
}

void gguf_writer::set_f32s(std::string_view key, std::span<const float> values) {
  set_raw(key, gguf_type::array, encode_array(gguf_type::f32, values));
}

void gguf_writer::set_i32s(std::string_view key, std::span<const std::int32_t> values) {
  set_raw(key, gguf_type::array, encode_array(gguf_type::i32, values));
}

result<void> gguf_writer::try_add(std::string name, std::vector<std::int64_t> ne, weight_tensor tensor) {
  if (tensor.empty()) return make_error(errc::invalid_argument, "GGUF writer: tensor '" + name + "' is empty");
  if (name.size() > gguf_limits::max_name_bytes) {
    return make_error(errc::invalid_argument, "GGUF writer: tensor name '" + name + "' is longer than " +
                                                  std::to_string(gguf_limits::max_name_bytes) + " bytes");
  }
  const bool is_repeated = std::any_of(tensors_.begin(), tensors_.end(), [&](const auto& t) { return t.name == name; });
  if (is_repeated) return make_error(errc::invalid_argument, "GGUF writer: tensor '" + name + "' is added twice");
  const std::uint64_t offset = data_bytes_;
  data_bytes_ = align_up(offset + tensor.bytes().size(), alignment_);
  tensors_.push_back({std::move(name), std::move(ne), std::move(tensor), offset});
  return {};
}

result<void> gguf_writer::try_add_matrix(std::string name, weight_tensor tensor) {
  std::vector<std::int64_t> ne{tensor.cols(), tensor.rows()};
  return try_add(std::move(name), std::move(ne), std::move(tensor));
}

result<void> gguf_writer::try_add_stacked(std::string name, weight_tensor tensor, std::int64_t num_stacked) {
  if (num_stacked <= 0 || tensor.rows() % num_stacked != 0) {
    return make_error(errc::invalid_argument, "GGUF writer: tensor '" + name + "' of " + std::to_string(tensor.rows()) +
                                                  " rows is not " + std::to_string(num_stacked) + " stacked matrices");
  }
  std::vector<std::int64_t> ne{tensor.cols(), tensor.rows() / num_stacked, num_stacked};
  return try_add(std::move(name), std::move(ne), std::move(tensor));
}

result<void> gguf_writer::try_add_vector(std::string name, std::span<const float> values) {
  auto tensor = weight_tensor::from_f32(std::vector<float>(values.begin(), values.end()), 1,
                                        std::int64_t(values.size()));
  return try_add(std::move(name), {std::int64_t(values.size())}, std::move(tensor));
}

std::string gguf_writer::encode_head() const {
  std::string head = "GGUF";
  append<std::uint32_t>(head, 3);
  append<std::uint64_t>(head, tensors_.size());
  append<std::uint64_t>(head, metadata_.size());
  for (const auto& e : metadata_) {
    append_string(head, e.key);
    append<std::uint32_t>(head, std::uint32_t(e.type));
    head += e.value;
  }
  for (const auto& t : tensors_) {
    append_string(head, t.name);
    append<std::uint32_t>(head, std::uint32_t(t.ne.size()));
    for (auto extent : t.ne) append<std::uint64_t>(head, std::uint64_t(extent));
    append<std::uint32_t>(head, ggml_type_of(t.tensor.dtype()));
    append<std::uint64_t>(head, t.offset);
  }
  head.resize(std::size_t(align_up(head.size(), alignment_)), '\0');
  return head;
}

std::uint64_t gguf_writer::file_size() const { return encode_head().size() + data_bytes_; }

result<void> gguf_writer::try_write(const std::filesystem::path& path) const {
  const auto part = std::filesystem::path(path.string() + ".part");
  std::ofstream out(part, std::ios::binary | std::ios::trunc);
  if (!out) return make_error(errc::io_error, "cannot create '" + part.string() + "'");
  const std::string head = encode_head();
  out.write(head.data(), std::streamsize(head.size()));
  const std::string padding(alignment_, '\0');
  for (const auto& t : tensors_) {
    const auto bytes = t.tensor.bytes();
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    const auto padded = align_up(bytes.size(), alignment_);
    out.write(padding.data(), std::streamsize(padded - bytes.size()));
  }
  out.close();
  std::error_code ec;
  if (!out) {
    std::filesystem::remove(part, ec);
    return make_error(errc::io_error, "cannot write '" + part.string() + "'");
  }
  std::filesystem::rename(part, path, ec);
  if (ec) return make_error(errc::io_error, "cannot rename '" + part.string() + "' to '" + path.string() + "': " + ec.message());
  return {};
}

result<std::vector<std::filesystem::path>> gguf_writer::try_write_split(const std::string& prefix,
                                                                      std::size_t max_tensors) const {
  if (max_tensors == 0) return make_error(errc::invalid_argument, "GGUF writer: a split part needs at least one tensor");
  const std::size_t count = std::max<std::size_t>(1, (tensors_.size() + max_tensors - 1) / max_tensors);
  if (count > 99999) return make_error(errc::invalid_argument, "GGUF writer: more than 99999 split parts");
  std::vector<std::filesystem::path> paths;
  for (std::size_t k = 0; k < count; ++k) {
    gguf_writer part(alignment_);
    if (k == 0) part.metadata_ = metadata_;
    std::string no, total;
    append(no, static_cast<std::uint16_t>(k));
    append(total, static_cast<std::uint16_t>(count));
    part.set_raw("split.no", gguf_type::u16, no);
    part.set_raw("split.count", gguf_type::u16, total);
    part.set_i32("split.tensors.count", static_cast<std::int32_t>(tensors_.size()));
    for (std::size_t i = k * max_tensors; i < std::min(tensors_.size(), (k + 1) * max_tensors); ++i) {
      const auto& t = tensors_[i];
      if (auto ok = part.try_add(t.name, t.ne, t.tensor); !ok) return std::unexpected(ok.error());
    }
    char tail[40];
    std::snprintf(tail, sizeof tail, "-%05zu-of-%05zu.gguf", k + 1, count);
    paths.push_back(prefix + tail);
    if (auto ok = part.try_write(paths.back()); !ok) return std::unexpected(ok.error());
  }
  return paths;
}

}  // namespace inflight

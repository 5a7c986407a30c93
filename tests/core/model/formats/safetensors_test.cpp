#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <unistd.h>

#include "core/model/formats/safetensors.hpp"
#include "dtypes/half.hpp"

using namespace inflight;

namespace {

struct scratch_dir {
  std::filesystem::path path;
  explicit scratch_dir(const std::string& tag) {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("inflight_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~scratch_dir() { std::filesystem::remove_all(path); }
};

std::string le64(std::uint64_t value) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = char((value >> (8 * i)) & 0xff);
  return out;
}

// A file built byte by byte: length, header text, data.
void write_raw(const std::filesystem::path& path, const std::string& header, const std::string& data,
               std::optional<std::uint64_t> length = std::nullopt) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const auto bytes = le64(length.value_or(header.size())) + header + data;
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

std::string f32_bytes(std::initializer_list<float> values) {
  std::string out;
  for (float v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
  return out;
}

// Opens `path`, expecting errc::corrupt_file whose message contains every `needle`.
void require_corrupt(const std::filesystem::path& path, std::initializer_list<std::string> needles) {
  auto file = safetensors_file::try_open(path);
  REQUIRE_FALSE(file.has_value());
  INFO(file.error().message);
  CHECK(file.error().code == errc::corrupt_file);
  CHECK(file.error().message.find(path.string()) != std::string::npos);
  for (const auto& needle : needles) CHECK(file.error().message.find(needle) != std::string::npos);
}

std::vector<float> random_values(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> out(n);
  for (auto& v : out) v = normal(rng);
  return out;
}

}  // namespace

TEST_CASE("fp16 conversion round-trips every finite and infinite value", "[core][safetensors]") {
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = std::uint16_t(bits);
    const float f = fp16_to_float(h);
    if (std::isnan(f)) {
      CHECK((h & 0x7c00) == 0x7c00);
      CHECK(std::isnan(fp16_to_float(float_to_fp16(f))));
      continue;
    }
    if (float_to_fp16(f) != h) REQUIRE(float_to_fp16(f) == h);
  }
  CHECK(fp16_to_float(0x3c00) == 1.0f);
  CHECK(fp16_to_float(0xc000) == -2.0f);
  CHECK(fp16_to_float(0x7bff) == 65504.0f);
  CHECK(fp16_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(float_to_fp16(1e6f) == 0x7c00);
  CHECK(float_to_fp16(-1e-10f) == 0x8000);
}

#ifdef __FLT16_MAX__
TEST_CASE("fp16 rounding matches the compiler's _Float16 conversion", "[core][safetensors]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  for (int i = 0; i < 200000; ++i) {
    // Bias exponents towards fp16's range so subnormals and overflow are hit often.
    std::uint32_t bits = any_bits(rng);
    bits = (bits & 0x807fffffu) | ((100u + (bits >> 23) % 50u) << 23);
    const float f = std::bit_cast<float>(bits);
    const _Float16 reference = static_cast<_Float16>(f);
    const auto expected = std::bit_cast<std::uint16_t>(reference);
    if (float_to_fp16(f) != expected) REQUIRE(float_to_fp16(f) == expected);
  }
}
#endif

TEST_CASE("bf16 conversion rounds to nearest even and keeps NaN", "[core][safetensors]") {
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float f = bf16_to_float(std::uint16_t(bits));
    if (!std::isnan(f) && float_to_bf16(f) != bits) REQUIRE(float_to_bf16(f) == bits);
  }
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(float_to_bf16(3.4e38f) == 0x7f80);  // past the largest bf16: overflows to infinity
  // 1 + 2^-8 is exactly half-way between 1 and 1 + 2^-7: ties to the even (1.0).
  CHECK(float_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
  CHECK(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
  CHECK(std::isnan(bf16_to_float(float_to_bf16(std::bit_cast<float>(0x7f800001u)))));
  std::mt19937 rng(3);
  std::uniform_int_distribution<std::uint32_t> any_bits(0, 0x7f7effffu);  // above, rounding overflows to inf
  for (int i = 0; i < 100000; ++i) {
    const float f = std::bit_cast<float>(any_bits(rng));
    const double rounded = bf16_to_float(float_to_bf16(f));
    const double down = bf16_to_float(std::uint16_t(std::bit_cast<std::uint32_t>(f) >> 16));
    const double up = bf16_to_float(std::uint16_t((std::bit_cast<std::uint32_t>(f) >> 16) + 1));
    const double error = std::abs(rounded - f);
    if (error > std::abs(down - f) || error > std::abs(up - f)) {
      INFO("f = " << f);
      REQUIRE(error <= std::abs(down - f));
      REQUIRE(error <= std::abs(up - f));
    }
  }
}

TEST_CASE("safetensors write then read returns every tensor", "[core][safetensors]") {
  scratch_dir dir("st_roundtrip");
  const auto a = random_values(6, 1), b = random_values(35, 2), c = random_values(4, 3);
  const std::vector<tensor_to_write> tensors{{"a", {2, 3}, a, tensor_dtype::f32},
                                             {"b.bf16", {5, 7}, b, tensor_dtype::bf16},
                                             {"c", {4}, c, tensor_dtype::f16},
                                             {"empty", {0, 3}, {}, tensor_dtype::f32}};
  const auto path = dir.path / "x.safetensors";
  REQUIRE(try_write_safetensors(path, tensors, {{"format", "pt"}}));
  const auto bytes = read_all(path);
  std::uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  CHECK(header_size % 8 == 0);
  CHECK(bytes.size() == 8 + header_size + 6 * 4 + 35 * 2 + 4 * 2);

  auto file = safetensors_file::try_open(path);
  REQUIRE(file);
  CHECK(file->tensors().size() == 4);
  CHECK(file->metadata().at("format") == "pt");
  const auto* view_b = file->find("b.bf16");
  REQUIRE(view_b != nullptr);
  CHECK(view_b->dtype == tensor_dtype::bf16);
  CHECK(view_b->shape == std::vector<std::int64_t>{5, 7});
  std::vector<float> out_a(6), out_b(35), out_c(4);
  REQUIRE(try_convert_to_f32(*file->find("a"), out_a));
  REQUIRE(try_convert_to_f32(*view_b, out_b));
  REQUIRE(try_convert_to_f32(*file->find("c"), out_c));
  CHECK(out_a == a);
  for (std::size_t i = 0; i < b.size(); ++i) CHECK(out_b[i] == bf16_to_float(float_to_bf16(b[i])));
  for (std::size_t i = 0; i < c.size(); ++i) CHECK(out_c[i] == fp16_to_float(float_to_fp16(c[i])));
  CHECK(file->find("empty")->num_elements() == 0);
  CHECK(file->find("missing") == nullptr);
  std::vector<float> wrong_size(5);
  CHECK(try_convert_to_f32(*file->find("a"), wrong_size).error().code == errc::invalid_argument);
}

TEST_CASE("safetensors reads unaligned data, scalars and integer dtypes", "[core][safetensors]") {
  scratch_dir dir("st_unaligned");
  const auto path = dir.path / "u.safetensors";
  // A 3-byte-odd header leaves the F32 data unaligned in the mapping.
  const std::string header =
      R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"v":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},)"
      R"("i":{"dtype":"I32","shape":[1],"data_offsets":[12,16]}}   )";
  write_raw(path, header, f32_bytes({1.5f, -2.0f, 3.25f, 0.0f}));
  auto file = safetensors_file::try_open(path);
  REQUIRE(file);
  std::vector<float> scalar(1), vec(2), ints(1);
  REQUIRE(try_convert_to_f32(*file->find("s"), scalar));
  REQUIRE(try_convert_to_f32(*file->find("v"), vec));
  CHECK(scalar[0] == 1.5f);
  CHECK(vec == std::vector<float>{-2.0f, 3.25f});
  const auto converted = try_convert_to_f32(*file->find("i"), ints);
  REQUIRE_FALSE(converted);
  CHECK(converted.error().code == errc::unsupported);
  CHECK(converted.error().message.find("I32") != std::string::npos);
}

TEST_CASE("safetensors truncated at any point is a corrupt file", "[core][safetensors]") {
  scratch_dir dir("st_truncated");
  const auto good = dir.path / "good.safetensors";
  const auto values = random_values(64, 5);
  const std::vector<tensor_to_write> tensors{{"weight", {8, 8}, values, tensor_dtype::f32}};
  REQUIRE(try_write_safetensors(good, tensors));
  const auto bytes = read_all(good);
  std::uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  const auto cut = dir.path / "cut.safetensors";
  write_bytes(cut, "");
  require_corrupt(cut, {"too short"});
  for (std::size_t length : {std::size_t(4), std::size_t(7)}) {
    write_bytes(cut, bytes.substr(0, length));
    require_corrupt(cut, {"too short"});
  }
  for (std::size_t length : {std::size_t(8), std::size_t(9), std::size_t(8 + header_size / 2),
                             std::size_t(8 + header_size - 1)}) {
    write_bytes(cut, bytes.substr(0, length));
    require_corrupt(cut, {"header length"});
  }
  for (std::size_t length : {std::size_t(8 + header_size), std::size_t(8 + header_size + 1), bytes.size() - 1}) {
    write_bytes(cut, bytes.substr(0, length));
    require_corrupt(cut, {"'weight'", "past the end"});
  }
}

TEST_CASE("safetensors headers nested past any real header are corrupt files", "[core][safetensors]") {
  scratch_dir dir("safetensors_deep");
  const auto path = dir.path / "deep.safetensors";
  // The error message quoted the shape, and dumping 200000 levels overflowed the stack.
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  write_raw(path, "{\"t\":{\"dtype\":\"F32\",\"shape\":" + deep + ",\"data_offsets\":[0,0]}}", "");
  require_corrupt(path, {"nests deeper than 64"});
  write_raw(path, "{\"t\":{\"dtype\":\"F32\",\"shape\":[[[1]]],\"data_offsets\":[0,0]}}", "");
  require_corrupt(path, {"'t'", "invalid shape"});
}

TEST_CASE("safetensors header problems give clear corrupt-file errors", "[core][safetensors]") {
  scratch_dir dir("st_header");
  const auto path = dir.path / "bad.safetensors";
  const std::string data = f32_bytes({1, 2, 3, 4});

  write_raw(path, "{}", data, std::uint64_t(1) << 63);
  require_corrupt(path, {"header length", "exceeds the file"});
  write_raw(path, "{}", data, 2 + data.size() + 1);
  require_corrupt(path, {"exceeds the file"});
  write_raw(path, "{\"t\": [1, 2", data);
  require_corrupt(path, {"not valid JSON"});
  write_raw(path, std::string("\xff\xfe garbage", 10), data);
  require_corrupt(path, {"not valid JSON"});
  write_raw(path, "[1, 2]", data);
  require_corrupt(path, {"not a JSON object"});
  write_raw(path, R"({"t": 5})", data);
  require_corrupt(path, {"'t'", "not an object"});
  write_raw(path, R"({"t": {"shape": [4], "data_offsets": [0, 16]}})", data);
  require_corrupt(path, {"'t'", "no dtype"});
  write_raw(path, R"({"t": {"dtype": "Q4_K", "shape": [4], "data_offsets": [0, 16]}})", data);
  require_corrupt(path, {"'t'", "unknown dtype 'Q4_K'"});
  write_raw(path, R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 1000]}})", data);
  require_corrupt(path, {"'t'", "past the end"});
  write_raw(path, R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [16, 0]}})", data);
  require_corrupt(path, {"'t'", "invalid data_offsets"});
  write_raw(path, R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0]}})", data);
  require_corrupt(path, {"'t'", "data_offsets"});
  write_raw(path, R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [-4, 12]}})", data);
  require_corrupt(path, {"'t'", "invalid data_offsets"});
  write_raw(path, R"({"t": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 16]}})", data);
  require_corrupt(path, {"'t'", "spans 16 bytes", "needs 24"});
  write_raw(path, R"({"t": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 16]}})", data);
  require_corrupt(path, {"'t'", "needs 8"});
  write_raw(path, R"({"t": {"dtype": "F32", "shape": [-1, 4], "data_offsets": [0, 16]}})", data);
  require_corrupt(path, {"'t'", "invalid shape"});
  write_raw(path, R"({"t": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 16]}})", data);
  require_corrupt(path, {"'t'", "invalid shape"});
  write_raw(path, R"({"t": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 16]}})", data);
  require_corrupt(path, {"'t'", "too large"});
  write_raw(path, R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                      "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})", data);
  require_corrupt(path, {"overlaps"});
  write_raw(path, R"({"__metadata__": {"k": 1}})", data);
  require_corrupt(path, {"__metadata__"});

  auto missing = safetensors_file::try_open(dir.path / "absent.safetensors");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == errc::not_found);
}

TEST_CASE("safetensors reader survives random damage without reading out of bounds", "[core][safetensors]") {
  scratch_dir dir("st_fuzz");
  const auto good = dir.path / "good.safetensors";
  const auto a = random_values(12, 8), b = random_values(10, 9);
  const std::vector<tensor_to_write> tensors{{"a", {3, 4}, a, tensor_dtype::f32},
                                             {"b", {10}, b, tensor_dtype::bf16}};
  REQUIRE(try_write_safetensors(good, tensors));
  const auto bytes = read_all(good);
  std::mt19937 rng(11);
  const auto damaged = dir.path / "damaged.safetensors";
  int num_opened = 0;
  for (int round = 0; round < 400; ++round) {
    std::string copy = bytes;
    const int num_flips = 1 + int(rng() % 4);
    for (int f = 0; f < num_flips; ++f) copy[rng() % copy.size()] = char(rng() % 256);
    if (round % 3 == 0) copy.resize(rng() % copy.size());
    write_bytes(damaged, copy);
    auto file = safetensors_file::try_open(damaged);
    if (!file) {
      CHECK(file.error().code == errc::corrupt_file);
      continue;
    }
    ++num_opened;
    for (const auto& [name, view] : file->tensors()) {
      std::vector<float> out(std::size_t(view.num_elements()));
      (void)try_convert_to_f32(view, out);  // ASan flags any byte outside the mapping
    }
  }
  CHECK(num_opened > 0);  // data-byte flips leave the header valid
}

TEST_CASE("tensor store follows a sharded index", "[core][safetensors]") {
  scratch_dir dir("st_shards");
  const auto a = random_values(6, 21), b = random_values(4, 22), c = random_values(2, 23);
  const std::vector<tensor_to_write> first{{"a", {2, 3}, a, tensor_dtype::f32}, {"b", {4}, b, tensor_dtype::f32}};
  const std::vector<tensor_to_write> second{{"c", {2}, c, tensor_dtype::f32}};
  REQUIRE(try_write_safetensors(dir.path / "model-00001-of-00002.safetensors", first));
  REQUIRE(try_write_safetensors(dir.path / "model-00002-of-00002.safetensors", second));
  const auto index = dir.path / "model.safetensors.index.json";
  write_bytes(index, R"({"metadata": {"total_size": 48}, "weight_map": {
      "a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
      "c": "model-00002-of-00002.safetensors"}})");
  auto store = tensor_store::try_open_folder(dir.path);
  REQUIRE(store);
  CHECK(store->num_files() == 2);
  CHECK(store->names() == std::vector<std::string>{"a", "b", "c"});
  CHECK(store->file_of("c") == dir.path / "model-00002-of-00002.safetensors");
  std::vector<float> out_c(2);
  REQUIRE(store->find("c") != nullptr);
  REQUIRE(try_convert_to_f32(*store->find("c"), out_c));
  CHECK(out_c == c);
  CHECK(store->find("d") == nullptr);

  write_bytes(index, R"({"weight_map": {"c": "model-00001-of-00002.safetensors"}})");
  auto wrong_shard = tensor_store::try_open_folder(dir.path);
  REQUIRE_FALSE(wrong_shard);
  CHECK(wrong_shard.error().code == errc::corrupt_file);
  CHECK(wrong_shard.error().message.find("'c'") != std::string::npos);

  write_bytes(index, R"({"weight_map": {"a": "../outside.safetensors"}})");
  CHECK(tensor_store::try_open_folder(dir.path).error().code == errc::corrupt_file);
  write_bytes(index, R"({"weight_map": {"a": "model-00003-of-00002.safetensors"}})");
  CHECK(tensor_store::try_open_folder(dir.path).error().code == errc::not_found);
  write_bytes(index, "");
  CHECK(tensor_store::try_open_folder(dir.path).error().code == errc::corrupt_file);
  write_bytes(index, R"({"weight_map": [1]})");
  CHECK(tensor_store::try_open_folder(dir.path).error().code == errc::corrupt_file);

  std::filesystem::remove(index);
  CHECK(tensor_store::try_open_folder(dir.path).error().code == errc::not_found);
}

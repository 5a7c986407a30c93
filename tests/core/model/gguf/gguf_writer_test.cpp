// gguf_writer -> gguf_file round trips: every weight type as it is, metadata of every
// kind the writer sets, alignment, and what the writer refuses.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include "core/model/convert.hpp"
#include "core/model/gguf/gguf.hpp"
#include "core/model/gguf/gguf_writer.hpp"

using namespace inflight;
namespace fs = std::filesystem;

namespace {

fs::path temp_path(const std::string& name) {
  const auto dir = fs::temp_directory_path() / "inflight_gguf_writer_test";
  fs::create_directories(dir);
  return dir / name;
}

weight_tensor random_matrix(std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(std::size_t(rows * cols));
  for (auto& v : values) v = normal(rng);
  return weight_tensor::from_f32(std::move(values), rows, cols);
}

}  // namespace

TEST_CASE("every weight type is written as it is and read back byte for byte", "[core][gguf]") {
  gguf_writer writer;
  std::vector<weight_tensor> written;
  for (int i = 0; i < num_weight_dtypes; ++i) {
    const auto dtype = weight_dtype(i);
    auto typed = try_convert(random_matrix(3, 512, std::uint32_t(i)), dtype);
    REQUIRE(typed.has_value());
    REQUIRE(typed->dtype() == dtype);
    REQUIRE(writer.try_add_matrix(std::string("m.") + to_string(dtype), *typed).has_value());
    written.push_back(*typed);
  }
  const std::vector<float> norm{1.0f, -0.5f, 2.0f};
  REQUIRE(writer.try_add_vector("norm", norm).has_value());
  const auto path = temp_path("all_types.gguf");
  REQUIRE(writer.try_write(path).has_value());
  CHECK(fs::file_size(path) == writer.file_size());
  CHECK_FALSE(fs::exists(path.string() + ".part"));

  auto file = gguf_file::try_open(path);
  REQUIRE(file.has_value());
  REQUIRE(file->tensors().size() == written.size() + 1);
  for (const auto& expected : written) {
    const auto* info = file->find_tensor(std::string("m.") + to_string(expected.dtype()));
    REQUIRE(info != nullptr);
    CHECK(info->ne == std::vector<std::int64_t>{512, 3});
    CHECK(info->ggml_type == ggml_type_of(expected.dtype()));
    CHECK(info->offset % 32 == 0);
    auto read = file->try_matrix(*info);
    REQUIRE(read.has_value());
    CHECK(*read == expected);
  }
  const auto* info = file->find_tensor("norm");
  REQUIRE(info != nullptr);
  CHECK(info->ne == std::vector<std::int64_t>{3});
  CHECK(file->try_values_f32(*info).value() == norm);
}

TEST_CASE("the GGUF type ids are llama.cpp's", "[core][gguf]") {
  CHECK(ggml_type_of(weight_dtype::f32) == 0);
  CHECK(ggml_type_of(weight_dtype::f16) == 1);
  CHECK(ggml_type_of(weight_dtype::q4_0) == 2);
  CHECK(ggml_type_of(weight_dtype::q5_0) == 6);
  CHECK(ggml_type_of(weight_dtype::q4_1) == 3);
  CHECK(ggml_type_of(weight_dtype::q5_1) == 7);
  CHECK(ggml_type_of(weight_dtype::iq4_nl) == 20);
  CHECK(ggml_type_of(weight_dtype::iq4_xs) == 23);
  CHECK(ggml_type_of(weight_dtype::q2_k) == 10);
  CHECK(ggml_type_of(weight_dtype::q3_k) == 11);
  CHECK(ggml_type_of(weight_dtype::mxfp4) == 39);
  CHECK(ggml_type_of(weight_dtype::q8_0) == 8);
  CHECK(ggml_type_of(weight_dtype::q4_k) == 12);
  CHECK(ggml_type_of(weight_dtype::q5_k) == 13);
  CHECK(ggml_type_of(weight_dtype::q6_k) == 14);
  CHECK(ggml_type_of(weight_dtype::bf16) == 30);
  for (int i = 0; i < num_weight_dtypes; ++i) {
    CHECK(weight_dtype_of_ggml(ggml_type_of(weight_dtype(i))) == weight_dtype(i));
  }
  CHECK(weight_dtype_of_ggml(16) == std::nullopt);  // IQ2_XXS
  CHECK(ggml_type_name(23) == "IQ4_XS");
  CHECK(ggml_type_name(11) == "Q3_K");
  CHECK(ggml_type_name(39) == "MXFP4");
  CHECK(weight_dtype_of_ggml(39) == weight_dtype::mxfp4);
  CHECK(ggml_type_name(1000) == "type 1000");
}

TEST_CASE("metadata the writer sets reads back with its type, setting a key again replaces it", "[core][gguf]") {
  gguf_writer writer(128);
  writer.set_u32("a.u32", 7);
  writer.set_i32("a.i32", -7);
  writer.set_u64("a.u64", std::uint64_t(1) << 50);
  writer.set_f32("a.f32", 0.125f);
  writer.set_bool("a.bool", false);
  writer.set_string("a.string", "h\xC3\xA9llo");
  const std::vector<std::string> strings{"x", "", "zz"};
  writer.set_strings("a.strings", strings);
  const std::vector<float> floats{1.0f, -1.0f};
  writer.set_f32s("a.f32s", floats);
  const std::vector<std::int32_t> ints{3, -4, 5};
  writer.set_i32s("a.i32s", ints);
  writer.set_u32("a.u32", 8);
  REQUIRE(writer.try_add_matrix("m", random_matrix(2, 32, 1)).has_value());
  REQUIRE(writer.try_add_matrix("n", random_matrix(1, 32, 2)).has_value());
  const auto path = temp_path("metadata.gguf");
  REQUIRE(writer.try_write(path).has_value());

  auto file = gguf_file::try_open(path);
  REQUIRE(file.has_value());
  CHECK(file->alignment() == 128);
  CHECK(file->data_offset() % 128 == 0);
  CHECK(file->find_tensor("n")->offset == 256);  // 2 x 32 f32 = 256 bytes, then aligned
  CHECK(file->metadata().size() == 10);          // general.alignment + 9 keys, a.u32 once
  CHECK(file->find("a.u32")->type() == gguf_type::u32);
  CHECK(file->find("a.u32")->as_int() == 8);
  CHECK(file->find("a.i32")->as_int() == -7);
  CHECK(file->find("a.u64")->as_int() == std::int64_t(1) << 50);
  CHECK(file->find("a.f32")->as_float() == 0.125);
  CHECK(file->find("a.bool")->as_bool() == false);
  CHECK(file->find("a.string")->as_string() == "h\xC3\xA9llo");
  CHECK(file->find("a.strings")->string_at(2) == "zz");
  CHECK(file->find("a.strings")->size() == 3);
  CHECK(file->find("a.f32s")->float_at(1) == -1.0);
  CHECK(file->find("a.i32s")->int_at(1) == -4);
}

TEST_CASE("the writer refuses empty tensors, long names and repeated names", "[core][gguf]") {
  gguf_writer writer;
  CHECK_FALSE(writer.try_add_matrix("empty", weight_tensor{}).has_value());
  CHECK_FALSE(writer.try_add_matrix(std::string(65, 'n'), random_matrix(1, 4, 1)).has_value());
  REQUIRE(writer.try_add_matrix("m", random_matrix(1, 4, 1)).has_value());
  auto twice = writer.try_add_matrix("m", random_matrix(1, 4, 2));
  REQUIRE_FALSE(twice.has_value());
  CHECK_THAT(twice.error().message, Catch::Contains("'m' is added twice"));
  CHECK(writer.num_tensors() == 1);
  CHECK_FALSE(writer.try_write("/nonexistent-dir/x.gguf").has_value());
}

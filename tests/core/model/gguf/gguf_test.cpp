// The GGUF reader against a file assembled byte by byte here, every kind of corruption,
// and writer -> reader round trips.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "core/model/convert.hpp"
#include "core/model/gguf/gguf.hpp"
#include "core/model/gguf/gguf_writer.hpp"
#include "dtypes/half.hpp"

using namespace inflight;

namespace {

/// Little-endian bytes with named positions, so a test can patch one field.
struct byte_builder {
  std::string out;
  std::map<std::string, std::size_t> marks;

  template <class T>
  byte_builder& put(T value) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out.append(bytes, sizeof(T));
    return *this;
  }
  byte_builder& str(std::string_view text) {
    put<std::uint64_t>(text.size());
    out.append(text);
    return *this;
  }
  byte_builder& mark(const std::string& name) {
    marks[name] = out.size();
    return *this;
  }
  byte_builder& pad(std::size_t alignment) {
    out.resize((out.size() + alignment - 1) / alignment * alignment, '\0');
    return *this;
  }
  /// A key and its value type (the value follows).
  byte_builder& key(std::string_view name, gguf_type type) {
    str(name);
    return put<std::uint32_t>(std::uint32_t(type));
  }
};

template <class T>
std::string patched(std::string bytes, std::size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof(T));
  return bytes;
}

result<gguf_file> parse(const std::string& bytes) {
  auto owned = std::make_shared<std::string>(bytes);
  const auto* data = reinterpret_cast<const std::byte*>(owned->data());
  return gguf_file::try_parse({data, owned->size()}, owned, "test.gguf");
}

/// The error message of a file that must not parse.
std::string refusal(const std::string& bytes) {
  auto file = parse(bytes);
  REQUIRE_FALSE(file.has_value());
  return file.error().message;
}

/// A q8_0 block of 32 values: fp16 scale 0.5, q = i - 16.
std::string q8_0_block() {
  byte_builder b;
  b.put<std::uint16_t>(float_to_fp16(0.5f));
  for (int i = 0; i < 32; ++i) b.put<std::int8_t>(std::int8_t(i - 16));
  return b.out;
}

constexpr float matrix_values[6] = {1.0f, -2.0f, 3.5f, 0.25f, -0.125f, 100.0f};

/// Every metadata type, general.alignment 64, an f32 [2 x 3] matrix and a q8_0 row.
byte_builder hand_made_file(std::uint32_t version = 3) {
  byte_builder b;
  b.out = "GGUF";
  b.mark("version").put<std::uint32_t>(version).mark("num_tensors").put<std::uint64_t>(2);
  b.mark("num_kv").put<std::uint64_t>(16);
  b.key("general.architecture", gguf_type::string).str("llama");
  b.key("t.u8", gguf_type::u8).put<std::uint8_t>(200);
  b.key("t.i8", gguf_type::i8).put<std::int8_t>(-5);
  b.key("t.u16", gguf_type::u16).put<std::uint16_t>(60000);
  b.key("t.i16", gguf_type::i16).put<std::int16_t>(-30000);
  b.key("t.u32", gguf_type::u32).put<std::uint32_t>(4000000000u);
  b.key("t.i32", gguf_type::i32).put<std::int32_t>(-2000000000);
  b.key("t.f32", gguf_type::f32).put<float>(1.5f);
  b.key("t.bool", gguf_type::boolean).put<std::uint8_t>(1);
  b.key("t.u64", gguf_type::u64).put<std::uint64_t>((std::uint64_t(1) << 40) + 3);
  b.key("t.i64", gguf_type::i64).put<std::int64_t>(-(std::int64_t(1) << 40));
  b.key("t.f64", gguf_type::f64).put<double>(2.25);
  b.mark("strings_key").key("t.strings", gguf_type::array).put<std::uint32_t>(std::uint32_t(gguf_type::string));
  b.mark("strings_count").put<std::uint64_t>(3).str("a").mark("string_length").str("").str("ccc");
  b.key("t.ints", gguf_type::array).put<std::uint32_t>(std::uint32_t(gguf_type::i32)).put<std::uint64_t>(3);
  b.put<std::int32_t>(1).put<std::int32_t>(-2).put<std::int32_t>(3);
  b.key("t.nested", gguf_type::array).put<std::uint32_t>(std::uint32_t(gguf_type::array)).put<std::uint64_t>(2);
  b.put<std::uint32_t>(std::uint32_t(gguf_type::u8)).put<std::uint64_t>(2).put<std::uint8_t>(7).put<std::uint8_t>(9);
  b.put<std::uint32_t>(std::uint32_t(gguf_type::string)).put<std::uint64_t>(1).str("x");
  b.mark("alignment_key").key("general.alignment", gguf_type::u32).mark("alignment").put<std::uint32_t>(64);
  b.mark("tensor_w").str("w").mark("w_dims").put<std::uint32_t>(2).mark("w_ne0").put<std::uint64_t>(3);
  b.put<std::uint64_t>(2).mark("w_type").put<std::uint32_t>(0).mark("w_offset").put<std::uint64_t>(0);
  b.mark("tensor_q").str("q").put<std::uint32_t>(2).mark("q_ne0").put<std::uint64_t>(32).put<std::uint64_t>(1);
  b.mark("q_type").put<std::uint32_t>(8).mark("q_offset").put<std::uint64_t>(64);
  b.pad(64).mark("data");
  for (float v : matrix_values) b.put<float>(v);
  b.pad(64).out += q8_0_block();
  return b;
}

}  // namespace

TEST_CASE("a GGUF file assembled byte by byte reads back exactly", "[core][gguf]") {
  for (std::uint32_t version : {2u, 3u}) {
    const auto b = hand_made_file(version);
    auto file = parse(b.out);
    REQUIRE(file.has_value());
    CHECK(file->version() == version);
    CHECK(file->alignment() == 64);
    CHECK(file->data_offset() == b.marks.at("data"));
    REQUIRE(file->metadata().size() == 16);
    CHECK(file->metadata()[0].first == "general.architecture");
    CHECK(file->find("general.architecture")->as_string() == "llama");
    CHECK(file->find("t.u8")->as_int() == 200);
    CHECK(file->find("t.i8")->as_int() == -5);
    CHECK(file->find("t.u16")->as_int() == 60000);
    CHECK(file->find("t.i16")->as_int() == -30000);
    CHECK(file->find("t.u32")->as_int() == 4000000000LL);
    CHECK(file->find("t.i32")->as_int() == -2000000000LL);
    CHECK(file->find("t.f32")->as_float() == 1.5);
    CHECK(file->find("t.f32")->as_int() == std::nullopt);
    CHECK(file->find("t.bool")->as_bool() == true);
    CHECK(file->find("t.u64")->as_int() == (std::int64_t(1) << 40) + 3);
    CHECK(file->find("t.i64")->as_int() == -(std::int64_t(1) << 40));
    CHECK(file->find("t.f64")->as_float() == 2.25);
    const auto* strings = file->find("t.strings");
    REQUIRE(strings->is_array());
    CHECK(strings->element_type() == gguf_type::string);
    REQUIRE(strings->size() == 3);
    CHECK(strings->string_at(0) == "a");
    CHECK(strings->string_at(1).empty());
    CHECK(strings->string_at(2) == "ccc");
    const auto* ints = file->find("t.ints");
    CHECK(ints->int_at(0) == 1);
    CHECK(ints->int_at(1) == -2);
    CHECK(ints->int_at(2) == 3);
    CHECK(ints->int_at(3) == std::nullopt);
    const auto* nested = file->find("t.nested");
    REQUIRE(nested->size() == 2);
    CHECK(nested->array_at(0).element_type() == gguf_type::u8);
    CHECK(nested->array_at(0).int_at(1) == 9);
    CHECK(nested->array_at(1).string_at(0) == "x");
    CHECK(file->find("t.missing") == nullptr);

    REQUIRE(file->tensors().size() == 2);
    const auto* w = file->find_tensor("w");
    REQUIRE(w != nullptr);
    CHECK(w->ne == std::vector<std::int64_t>{3, 2});
    CHECK(w->rows() == 2);
    CHECK(w->dtype == weight_dtype::f32);
    auto matrix = file->try_matrix(*w);
    REQUIRE(matrix.has_value());
    CHECK(matrix->rows() == 2);
    CHECK(matrix->cols() == 3);
    CHECK(std::vector<float>(matrix->f32().begin(), matrix->f32().end()) ==
          std::vector<float>(std::begin(matrix_values), std::end(matrix_values)));
    // A view of the buffer, not a copy.
    CHECK(reinterpret_cast<const char*>(matrix->bytes().data()) ==
          reinterpret_cast<const char*>(w->bytes.data()));
    const auto* q = file->find_tensor("q");
    REQUIRE(q != nullptr);
    CHECK(q->dtype == weight_dtype::q8_0);
    CHECK(q->offset == 64);
    auto values = file->try_values_f32(*q);
    REQUIRE(values.has_value());
    REQUIRE(values->size() == 32);
    CHECK((*values)[0] == -8.0f);
    CHECK((*values)[31] == 7.5f);
    CHECK(file->find_tensor("nope") == nullptr);
  }
}

TEST_CASE("every truncation of a GGUF file is an error, not a crash", "[core][gguf]") {
  const auto full = hand_made_file().out;
  REQUIRE(parse(full).has_value());
  for (std::size_t n = 0; n < full.size(); ++n) {
    INFO("truncated to " << n << " of " << full.size() << " bytes");
    auto file = parse(full.substr(0, n));
    REQUIRE_FALSE(file.has_value());
    CHECK(file.error().code == errc::corrupt_file);
  }
}

TEST_CASE("a GGUF header that is not GGUF v2 / v3 little-endian is refused by name", "[core][gguf]") {
  const auto b = hand_made_file();
  const auto at = b.marks.at("version");
  CHECK_THAT(refusal("GGUX" + b.out.substr(4)), Catch::Contains("magic"));
  CHECK_THAT(refusal(patched<std::uint32_t>(b.out, at, 1)), Catch::Contains("version 1 is not supported"));
  CHECK_THAT(refusal(patched<std::uint32_t>(b.out, at, 4)), Catch::Contains("unknown GGUF version 4"));
  CHECK_THAT(refusal(patched<std::uint32_t>(b.out, at, 0x03000000)), Catch::Contains("big-endian"));
}

TEST_CASE("huge counts and lengths are refused before anything is allocated", "[core][gguf]") {
  const auto b = hand_made_file();
  const std::uint64_t huge = std::uint64_t(1) << 62;
  CHECK_THAT(refusal(patched(b.out, b.marks.at("num_kv"), huge)), Catch::Contains("metadata entries"));
  CHECK_THAT(refusal(patched(b.out, b.marks.at("num_tensors"), huge)), Catch::Contains("tensors but only"));
  CHECK_THAT(refusal(patched(b.out, b.marks.at("strings_key"), ~std::uint64_t(0))), Catch::Contains("has length"));
  CHECK_THAT(refusal(patched(b.out, b.marks.at("strings_count"), huge)), Catch::Contains("4611686018427387904 elements"));
  CHECK_THAT(refusal(patched(b.out, b.marks.at("string_length"), huge)), Catch::Contains("element 1 of metadata 't.strings'"));
  // ne = {2^40, 2^40}: the element count overflows what any file holds.
  auto dims = patched(b.out, b.marks.at("w_ne0"), std::uint64_t(1) << 40);
  dims = patched(dims, b.marks.at("w_ne0") + 8, std::uint64_t(1) << 40);
  CHECK_THAT(refusal(dims), Catch::Contains("too many values"));
  // A zero extent does not hide the others: {0, 2^40, 2^40} has an overflowing row count.
  byte_builder zero;
  zero.out = "GGUF";
  zero.put<std::uint32_t>(3).put<std::uint64_t>(1).put<std::uint64_t>(0).str("z").put<std::uint32_t>(3);
  zero.put<std::uint64_t>(0).put<std::uint64_t>(std::uint64_t(1) << 40).put<std::uint64_t>(std::uint64_t(1) << 40);
  zero.put<std::uint32_t>(0).put<std::uint64_t>(0);
  CHECK_THAT(refusal(zero.out), Catch::Contains("tensor 'z' has a dimension of 1099511627776: too many values"));
  // 2^61 f32 values would be 2^63 bytes: refused before a byte count overflows.
  CHECK_THAT(refusal(patched(b.out, b.marks.at("w_ne0"), std::uint64_t(1) << 61)), Catch::Contains("too many values"));
  CHECK_THAT(refusal(patched(b.out, b.marks.at("w_ne0"), std::uint64_t(1) << 59)), Catch::Contains("does not fit"));
  // Sizes that fit in the count but not in the file.
  CHECK_THAT(refusal(patched(b.out, b.marks.at("w_ne0"), std::uint64_t(3) << 20)), Catch::Contains("does not fit"));
}

TEST_CASE("bad types, dimensions, offsets and alignment are refused, naming the tensor", "[core][gguf]") {
  const auto b = hand_made_file();
  const auto m = [&](const char* name) { return b.marks.at(name); };
  CHECK_THAT(refusal(patched<std::uint32_t>(b.out, m("strings_key") + 8 + 9, 13)), Catch::Contains("unknown value type 13"));
  auto iq2_xxs = parse(patched<std::uint32_t>(b.out, m("w_type"), 16));
  REQUIRE_FALSE(iq2_xxs.has_value());
  CHECK(iq2_xxs.error().code == errc::unsupported);
  CHECK_THAT(iq2_xxs.error().message, Catch::Contains("tensor 'w' has type IQ2_XXS"));
  CHECK_THAT(refusal(patched<std::uint32_t>(b.out, m("w_type"), 99)), Catch::Contains("tensor 'w' has type type 99"));
  CHECK_THAT(refusal(patched<std::uint32_t>(b.out, m("w_dims"), 5)), Catch::Contains("tensor 'w' has 5 dimensions"));
  CHECK_THAT(refusal(patched<std::uint32_t>(b.out, m("w_dims"), 0)), Catch::Contains("tensor 'w' has 0 dimensions"));
  CHECK_THAT(refusal(patched<std::uint64_t>(b.out, m("q_offset"), 65)), Catch::Contains("not a multiple of the alignment 64"));
  CHECK_THAT(refusal(patched<std::uint64_t>(b.out, m("q_offset"), 128)), Catch::Contains("tensor 'q'"));
  CHECK_THAT(refusal(patched<std::uint64_t>(b.out, m("q_offset"), 0)), Catch::Contains("overlap"));
  CHECK_THAT(refusal(patched<std::uint64_t>(b.out, m("q_ne0"), 33)), Catch::Contains("whole number of Q8_0 blocks"));
  CHECK_THAT(refusal(patched<std::uint32_t>(b.out, m("alignment"), 48)), Catch::Contains("general.alignment"));
  CHECK_THAT(refusal(patched<std::uint32_t>(b.out, m("alignment"), 0)), Catch::Contains("general.alignment"));
  // The q tensor renamed "w": a duplicate name.
  CHECK_THAT(refusal(patched<char>(b.out, m("tensor_q") + 8, 'w')), Catch::Contains("tensor 'w' appears twice"));
  // t.u8 renamed t.i8: a duplicate key.
  auto dup = b.out;
  const auto u8_key = dup.find("t.u8");
  dup.replace(u8_key, 4, "t.i8");
  CHECK_THAT(refusal(dup), Catch::Contains("metadata key 't.i8' appears twice"));
}

TEST_CASE("arrays nested deeper than the limit are refused", "[core][gguf]") {
  byte_builder b;
  b.out = "GGUF";
  b.put<std::uint32_t>(3).put<std::uint64_t>(0).put<std::uint64_t>(1);
  b.key("deep", gguf_type::array);
  for (int i = 0; i < gguf_limits::max_array_depth + 1; ++i) {
    b.put<std::uint32_t>(std::uint32_t(gguf_type::array)).put<std::uint64_t>(1);
  }
  b.put<std::uint32_t>(std::uint32_t(gguf_type::u8)).put<std::uint64_t>(0);
  CHECK_THAT(refusal(b.out), Catch::Contains("nests arrays deeper than 8"));
}

TEST_CASE("a file with metadata only and no tensors parses", "[core][gguf]") {
  byte_builder b;
  b.out = "GGUF";
  b.put<std::uint32_t>(3).put<std::uint64_t>(0).put<std::uint64_t>(1);
  b.key("general.name", gguf_type::string).str("x");
  auto file = parse(b.out);
  REQUIRE(file.has_value());
  CHECK(file->tensors().empty());
  CHECK(file->find("general.name")->as_string() == "x");
}

TEST_CASE("tensor info that ends exactly on the alignment puts the data right there, not one alignment later",
          "[core][gguf]") {
  // 24 header bytes, general.alignment (33 bytes), then one tensor's entry of 32 bytes
  // plus its name: a 39-byte name ends the tensor infos at 128, a multiple of 32 and 64.
  for (std::uint32_t alignment : {32u, 64u}) {
    INFO("alignment " << alignment);
    byte_builder b;
    b.out = "GGUF";
    b.put<std::uint32_t>(3).put<std::uint64_t>(1).put<std::uint64_t>(1);
    b.key("general.alignment", gguf_type::u32).put<std::uint32_t>(alignment);
    b.str(std::string(39, 'w')).put<std::uint32_t>(1).put<std::uint64_t>(4).put<std::uint32_t>(0).put<std::uint64_t>(0);
    REQUIRE(b.out.size() == 128);
    b.pad(alignment).mark("data");
    REQUIRE(b.marks.at("data") == 128);
    for (float v : {1.5f, -2.0f, 0.25f, 8.0f}) b.put<float>(v);
    // A second alignment's worth of bytes after the data: a data section placed one
    // alignment too late would still fit in the file, and read these.
    b.out.append(alignment, '\x7f');
    auto file = parse(b.out);
    REQUIRE(file.has_value());
    CHECK(file->data_offset() == 128);
    const auto* w = file->find_tensor(std::string(39, 'w'));
    REQUIRE(w != nullptr);
    auto values = file->try_values_f32(*w);
    REQUIRE(values.has_value());
    CHECK(*values == std::vector<float>{1.5f, -2.0f, 0.25f, 8.0f});
  }
}

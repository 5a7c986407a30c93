#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "core/model/formats/dummy_model.hpp"
#include "core/model/model_loader.hpp"
#include "core/model/model_weights.hpp"
#include "core/model/quant/quantize.hpp"
#include "dtypes/half.hpp"

using namespace inflight;

namespace {

std::vector<std::byte> half_bytes(const std::vector<float>& values, bool is_bf16) {
  std::vector<std::byte> out(values.size() * 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t bits = is_bf16 ? float_to_bf16(values[i]) : float_to_fp16(values[i]);
    std::memcpy(out.data() + 2 * i, &bits, 2);
  }
  return out;
}

}  // namespace

TEST_CASE("weight tensors: views are checked against their bytes", "[core][weights]") {
  std::vector<std::byte> bytes(2 * 34);  // two q8_0 blocks
  auto keep = std::make_shared<int>(0);
  auto ok = weight_tensor::try_view(weight_dtype::q8_0, 1, 64, bytes, keep);
  REQUIRE(ok);
  CHECK(ok->row_bytes() == 68);
  CHECK(ok->f32().empty());  // not fp32
  CHECK(weight_tensor::try_view(weight_dtype::q8_0, 2, 32, bytes, keep));
  // One byte short, a row that is not whole blocks, a shape whose byte count overflows.
  CHECK(weight_tensor::try_view(weight_dtype::q8_0, 1, 64, std::span(bytes).first(67), keep).error().code ==
        errc::corrupt_file);
  CHECK_FALSE(weight_tensor::try_view(weight_dtype::q8_0, 2, 34, bytes, keep));
  CHECK_FALSE(weight_tensor::try_view(weight_dtype::f32, std::int64_t(1) << 40, std::int64_t(1) << 40, bytes, keep));
  CHECK(weight_tensor::from_f32(std::vector<float>(5), 2, 3).empty());
}

TEST_CASE("weight tensors: fp16 and bf16 rows decode to fp32", "[core][weights]") {
  const std::vector<float> values{1.0f, -2.5f, 0.125f, 65504.0f, 3.0f, -0.0f};
  for (const bool is_bf16 : {false, true}) {
    const auto dtype = is_bf16 ? weight_dtype::bf16 : weight_dtype::f16;
    const auto t = weight_tensor::from_bytes(dtype, 2, 3, half_bytes(values, is_bf16));
    REQUIRE_FALSE(t.empty());
    auto decoded = try_to_f32(t);
    REQUIRE(decoded);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::uint16_t bits = is_bf16 ? float_to_bf16(values[i]) : float_to_fp16(values[i]);
      CHECK((*decoded)[i] == (is_bf16 ? bf16_to_float(bits) : fp16_to_float(bits)));
    }
    std::vector<float> row(3);
    REQUIRE(try_row_to_f32(t, 1, row));
    CHECK(row[0] == (*decoded)[3]);
    CHECK_FALSE(try_row_to_f32(t, 2, row));
  }
}

TEST_CASE("model weights: the dtypes in use, and decoding a model to fp32 keeps a tied classifier tied", "[core][weights]") {
  model_config c = dummy_model_config(dummy_shape{});
  c.dim = 64;
  c.hidden_dim = 128;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.vocab_size = 300;
  auto w = make_dummy_weights(c, 3);
  REQUIRE(w);
  CHECK(weight_dtypes_of(*w) == std::vector<weight_dtype>{weight_dtype::f32});
  // Store one matrix as bf16: both types are now listed, and decoding brings it back to fp32.
  auto& wv = w->layers[1].wv;
  std::vector<float> values(wv.f32().begin(), wv.f32().end());
  wv = weight_tensor::from_bytes(weight_dtype::bf16, wv.rows(), wv.cols(), half_bytes(values, true));
  CHECK(weight_dtypes_of(*w) == std::vector<weight_dtype>{weight_dtype::f32, weight_dtype::bf16});
  auto decoded = try_decode_to_f32(*w);
  REQUIRE(decoded);
  CHECK(weight_dtypes_of(*decoded) == std::vector<weight_dtype>{weight_dtype::f32});
  CHECK(decoded->layers[1].wv.f32()[5] == bf16_to_float(float_to_bf16(values[5])));
  CHECK(decoded->classifier.empty());
  CHECK(decoded->classifier_tensor().shares_storage(decoded->token_embedding));
}

TEST_CASE("weight tensors: quantized rows decode to what their blocks hold", "[core][weights]") {
  std::vector<float> values(2 * 64);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::sin(float(i) * 0.37f) * (i < 64 ? 1.0f : 1e-3f);
  for (const auto dtype : {weight_dtype::q8_0, weight_dtype::q4_0}) {
    std::vector<std::byte> bytes(std::size_t(2 * row_bytes(dtype, 64)));
    REQUIRE(quantize_row(dtype, values.data(), 64, bytes.data()));
    REQUIRE(quantize_row(dtype, values.data() + 64, 64, bytes.data() + row_bytes(dtype, 64)));
    const auto t = weight_tensor::from_bytes(dtype, 2, 64, bytes);
    REQUIRE_FALSE(t.empty());
    auto decoded = try_to_f32(t);
    REQUIRE(decoded);
    std::vector<float> expected(64);
    REQUIRE(dequantize_row(dtype, bytes.data() + row_bytes(dtype, 64), 64, expected.data()));
    for (int i = 0; i < 64; ++i) CHECK((*decoded)[64 + i] == expected[i]);
    // The small row keeps its own scale: close to the input, not flushed to zero.
    CHECK((*decoded)[64 + 1] == Approx(values[64 + 1]).margin(2e-4));
    CHECK((*decoded)[64 + 1] != 0.0f);
  }
}

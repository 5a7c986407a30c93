// Converting a model's matrices: the recipes (one type, llama.cpp's Q4_K_M mix), the
// fallbacks for widths that are not whole blocks, and conversions in place.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "core/model/convert.hpp"
#include "core/model/formats/dummy_model.hpp"
#include "core/model/model_loader.hpp"
#include "core/model/quant/quantize.hpp"

using namespace inflight;

namespace {

model_config small_config(int dim, int hidden, int layers) {
  model_config c = dummy_model_config(dummy_shape{});
  c.dim = dim;
  c.hidden_dim = hidden;
  c.num_layers = layers;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = dim / 4;
  c.vocab_size = 96;
  return c;
}

/// Relative RMS difference of two tensors' decoded values.
double relative_error(const weight_tensor& a, const weight_tensor& b) {
  auto x = try_to_f32(a), y = try_to_f32(b);
  REQUIRE(x);
  REQUIRE(y);
  double e = 0.0, s = 0.0;
  for (std::size_t i = 0; i < x->size(); ++i) e += ((*x)[i] - (*y)[i]) * double((*x)[i] - (*y)[i]), s += double((*x)[i]) * (*x)[i];
  return std::sqrt(e / s);
}

}  // namespace

TEST_CASE("quant recipes: names parse, unknown ones are refused by name", "[core][quant]") {
  auto mix = try_parse_recipe("Q4_K_M");
  REQUIRE(mix);
  CHECK(mix->is_q4_k_m);
  CHECK(to_string(*mix) == "q4_k_m");
  auto q8 = try_parse_recipe("q8_0");
  REQUIRE(q8);
  CHECK_FALSE(q8->is_q4_k_m);
  CHECK(q8->base == weight_dtype::q8_0);
  auto bad = try_parse_recipe("q3_k_s");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("q3_k_s") && Catch::Contains("q4_k_m"));
}

TEST_CASE("quant recipes: Q4_K_M gives q6_k to the classifier and to wv and w_down of chosen layers", "[core][quant]") {
  const quant_recipe mix{weight_dtype::q4_k, true};
  const int n = 32;  // first and last eighth: 0-3, 28-31; between, every third from 6
  std::vector<int> more_bits;
  for (int l = 0; l < n; ++l) {
    const auto v = dtype_for(mix, matrix_role::wv, l, n, false);
    CHECK(dtype_for(mix, matrix_role::w_down, l, n, false) == v);
    CHECK(dtype_for(mix, matrix_role::wq, l, n, false) == weight_dtype::q4_k);
    CHECK(dtype_for(mix, matrix_role::w_up, l, n, false) == weight_dtype::q4_k);
    if (v == weight_dtype::q6_k) more_bits.push_back(l);
  }
  CHECK(more_bits == std::vector<int>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31});
  CHECK(dtype_for(mix, matrix_role::classifier, n - 1, n, false) == weight_dtype::q6_k);
  CHECK(dtype_for(mix, matrix_role::token_embedding, 0, n, false) == weight_dtype::q4_k);
  CHECK(dtype_for(mix, matrix_role::token_embedding, 0, n, true) == weight_dtype::q6_k);
  const quant_recipe pure{weight_dtype::q4_0, false};
  CHECK(dtype_for(pure, matrix_role::classifier, 0, n, false) == weight_dtype::q4_0);
}

TEST_CASE("quant recipes: widths that are not whole blocks fall back as llama-quantize does, then to f16", "[core][quant]") {
  CHECK(fallback_for(weight_dtype::q4_k, 512) == weight_dtype::q4_k);
  CHECK(fallback_for(weight_dtype::q4_k, 288) == weight_dtype::q5_0);
  CHECK(fallback_for(weight_dtype::q6_k, 288) == weight_dtype::q8_0);
  CHECK(fallback_for(weight_dtype::q5_k, 64) == weight_dtype::q5_1);  // as llama-quantize
  CHECK(fallback_for(weight_dtype::q2_k, 288) == weight_dtype::q4_0);  // as llama-quantize
  CHECK(fallback_for(weight_dtype::q3_k, 64) == weight_dtype::q4_0);
  CHECK(fallback_for(weight_dtype::q3_k, 768) == weight_dtype::q3_k);
  CHECK(fallback_for(weight_dtype::q2_k, 172) == weight_dtype::f16);
  CHECK(fallback_for(weight_dtype::q6_k, 172) == weight_dtype::f16);  // stories260K's FFN width
  CHECK(fallback_for(weight_dtype::q4_0, 64) == weight_dtype::q4_0);
  CHECK(fallback_for(weight_dtype::mxfp4, 64) == weight_dtype::mxfp4);
  CHECK(fallback_for(weight_dtype::mxfp4, 172) == weight_dtype::f16);  // as every 32-value type's
  CHECK(fallback_for(weight_dtype::bf16, 172) == weight_dtype::bf16);
  auto t = weight_tensor::from_f32(std::vector<float>(2 * 172, 1.0f), 2, 172);
  auto refused = try_convert(t, weight_dtype::q8_0);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::Contains("172") && Catch::Contains("q8_0"));
}

TEST_CASE("quant convert: a matrix converted on several threads equals one converted row by row", "[core][quant]") {
  const std::int64_t rows = 67, cols = 256;
  std::vector<float> values(std::size_t(rows * cols));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::sin(float(i) * 0.013f) * (1.0f + float(i % 7));
  const auto t = weight_tensor::from_f32(values, rows, cols);
  for (const auto dtype : {weight_dtype::q8_0, weight_dtype::q4_k, weight_dtype::q6_k, weight_dtype::bf16}) {
    auto one = try_convert(t, dtype, 1), four = try_convert(t, dtype, 4);
    REQUIRE(one);
    REQUIRE(four);
    CHECK(one->dtype() == dtype);
    CHECK(*one == *four);
    std::vector<std::byte> row(std::size_t(row_bytes(dtype, cols)));
    REQUIRE(quantize_row(dtype, values.data() + 66 * cols, cols, row.data()));
    CHECK(std::equal(row.begin(), row.end(), four->row(66).begin()));
  }
}

TEST_CASE("quant convert: a model in place, fallbacks per matrix, tied classifier kept tied", "[core][quant]") {
  auto f32 = make_dummy_weights(small_config(256, 172, 4), 7);
  REQUIRE(f32);
  auto w = *f32;
  REQUIRE(try_quantize_weights(w, quant_recipe{weight_dtype::q4_k, true}));
  const bool tied = f32->classifier.empty();
  CHECK(w.classifier.empty() == tied);
  CHECK(w.token_embedding.dtype() == (tied ? weight_dtype::q6_k : weight_dtype::q4_k));
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const auto& q = w.layers[l];
    CHECK(q.wq.dtype() == weight_dtype::q4_k);
    CHECK(q.w_up.dtype() == weight_dtype::q4_k);
    CHECK(q.w_down.dtype() == weight_dtype::f16);  // 172 columns: no whole 32-value blocks
    CHECK(q.wv.dtype() == (l == 2 || l == 3 ? weight_dtype::q6_k : weight_dtype::q4_k));
    CHECK(relative_error(q.wq, f32->layers[l].wq) < 0.1);
    CHECK(relative_error(q.w_down, f32->layers[l].w_down) < 1e-3);
    CHECK(q.attn_norm == f32->layers[l].attn_norm);
  }
  CHECK(weight_dtypes_of(w) == std::vector<weight_dtype>{weight_dtype::f16, weight_dtype::q4_k, weight_dtype::q6_k});
  // Back to f32: values as the blocks hold them, every matrix f32 again.
  REQUIRE(try_quantize_weights(w, quant_recipe{weight_dtype::f32, false}));
  CHECK(weight_dtypes_of(w) == std::vector<weight_dtype>{weight_dtype::f32});
  CHECK(relative_error(w.layers[1].wq, f32->layers[1].wq) < 0.1);
}

TEST_CASE("quant convert: model.weight_dtype quantizes a loaded model", "[core][quant]") {
  model_settings s;
  s.format = "dummy";
  s.dummy.hidden_size = 64;
  s.dummy.intermediate_size = 128;
  s.dummy.num_layers = 2;
  s.dummy.num_heads = 4;
  s.dummy.num_kv_heads = 2;
  s.weight_dtype = "q8_0";
  auto m = load_model(s);
  REQUIRE(m);
  CHECK(weight_dtypes_of(*m->weights) == std::vector<weight_dtype>{weight_dtype::q8_0});
  CHECK_THAT(m->description, Catch::Contains("q8_0"));
  s.weight_dtype = "q4_k";  // 64 and 128 columns: no whole 256-value blocks, so q5_0
  m = load_model(s);
  REQUIRE(m);
  CHECK(weight_dtypes_of(*m->weights) == std::vector<weight_dtype>{weight_dtype::q5_0});
  s.weight_dtype = "q7";
  auto bad = load_model(s);
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("q7"));
}

TEST_CASE("quant convert: dummy weights drawn into a recipe equal f32 ones converted after", "[core][quant]") {
  const auto c = small_config(256, 512, 3);
  const quant_recipe mix{weight_dtype::q4_k, true};
  auto direct = make_dummy_weights(c, 11, &mix);
  auto after = make_dummy_weights(c, 11);
  REQUIRE(direct);
  REQUIRE(after);
  REQUIRE(try_quantize_weights(*after, mix));
  CHECK(direct->token_embedding == after->token_embedding);
  for (std::size_t l = 0; l < direct->layers.size(); ++l) {
    const auto a = matrices_of(direct->layers[l]), b = matrices_of(after->layers[l]);
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(*a[i] == *b[i]);
  }
  CHECK(direct->layers[2].w_down.dtype() == weight_dtype::q6_k);  // the last eighth
  CHECK(direct->layers[0].w_down.dtype() == weight_dtype::q4_k);
}

// Llama-3 RoPE scaling as GGUF's per-pair factors and back: the factors of real Llama
// 3.1 / 3.2 settings fit back to scaling that gives the same factors, and factors of
// another shape are refused.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/model/rope_factors.hpp"

using namespace inflight;

namespace {

model_config llama3_config(int head_dim, float theta, float factor, float low, float high, int original) {
  model_config c;
  c.head_dim = head_dim;
  c.rope_theta = theta;
  c.scaling = {rope_scaling_type::llama3, factor, low, high, original};
  return c;
}

/// The fit reproduces every factor (the parameters themselves may differ: only the band matters).
void check_round_trip(const model_config& c) {
  const auto factors = llama3_rope_factors(c);
  REQUIRE(factors.size() == std::size_t(c.head_dim / 2));
  auto fitted = try_fit_llama3_scaling(factors, c, c.scaling.original_max_position);
  if (!fitted) FAIL(fitted.error().message);
  CHECK(fitted->type == rope_scaling_type::llama3);
  CHECK(fitted->factor == Approx(c.scaling.factor).epsilon(1e-6));
  CHECK(fitted->original_max_position == c.scaling.original_max_position);
  auto refit = c;
  refit.scaling = *fitted;
  const auto again = llama3_rope_factors(refit);
  for (std::size_t i = 0; i < factors.size(); ++i) {
    INFO("pair " << i);
    CHECK(again[i] == Approx(factors[i]).epsilon(1e-5));
  }
}

}  // namespace

TEST_CASE("Llama-3.1 and 3.2 scaling: factors 1, smoothed, full, the fit gives them back", "[core][gguf][rope]") {
  const auto llama31 = llama3_config(128, 500000.0f, 8.0f, 1.0f, 4.0f, 8192);
  const auto factors = llama3_rope_factors(llama31);
  CHECK(factors.front() == 1.0f);
  CHECK(factors.back() == 8.0f);
  const auto num_smoothed = std::count_if(factors.begin(), factors.end(), [](float f) { return f > 1.0f && f < 8.0f; });
  CHECK(num_smoothed == 6);
  check_round_trip(llama31);
  auto fitted = try_fit_llama3_scaling(factors, llama31, 8192);
  REQUIRE(fitted.has_value());
  CHECK(fitted->low_freq_factor == Approx(1.0f).epsilon(1e-4));
  CHECK(fitted->high_freq_factor == Approx(4.0f).epsilon(1e-4));
  check_round_trip(llama3_config(64, 500000.0f, 32.0f, 1.0f, 4.0f, 8192));  // Llama 3.2 1B
  check_round_trip(llama3_config(128, 500000.0f, 32.0f, 1.0f, 4.0f, 8192)); // Llama 3.2 3B
}

TEST_CASE("bands holding one pair or none fit too", "[core][gguf][rope]") {
  // head_dim 16: wavelengths grow by theta^(1/8) per pair, so narrow bands catch 0 or 1 pairs.
  for (float high : {1.05f, 1.2f, 1.5f, 2.0f, 3.0f}) {
    for (int original : {64, 256, 1024, 4096}) {
      INFO("high_freq_factor " << high << ", original " << original);
      check_round_trip(llama3_config(16, 10000.0f, 4.0f, 1.0f, high, original));
    }
  }
}

TEST_CASE("all-one factors mean no scaling, other shapes are refused", "[core][gguf][rope]") {
  const auto c = llama3_config(16, 10000.0f, 8.0f, 1.0f, 4.0f, 256);
  const std::vector<float> ones(8, 1.0f);
  auto none = try_fit_llama3_scaling(ones, c, 256);
  REQUIRE(none.has_value());
  CHECK_FALSE(none->enabled());
  const std::vector<float> rising{1, 1, 2, 3, 2, 8, 8, 8};  // not monotone
  auto bad = try_fit_llama3_scaling(rising, c, 256);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().code == errc::unsupported);
  CHECK_THAT(bad.error().message, Catch::Contains("rope_freqs.weight"));
  const std::vector<float> linear(8, 4.0f);  // linear scaling: every pair slowed alike
  CHECK(try_fit_llama3_scaling(linear, c, 256).has_value());  // the band above every pair: same factors
  CHECK_FALSE(try_fit_llama3_scaling(std::vector<float>(7, 1.0f), c, 256).has_value());
  CHECK_FALSE(try_fit_llama3_scaling(std::vector<float>{1, 1, 1, 1, 1, 1, 1, 0.5f}, c, 256).has_value());
}

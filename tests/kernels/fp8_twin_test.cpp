// The CPU twins of the CUDA fp8 path (kernels/cpu/twins.hpp): the per-tensor scale and
// codes of fp8_quantize, and fp8_linear_twin against the product of the unquantized
// values within what E4M3's 3 mantissa bits allow.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "dtypes/fp8.hpp"
#include "kernels/cpu/twins.hpp"

using namespace inflight;
using namespace inflight::kernels::cpu;

TEST_CASE("fp8_quantize scales the largest magnitude to 448", "[kernels][fp8]") {
  std::vector<float> x = {0.5f, -3.0f, 1.25f, 0.0f, 2.9f};
  std::vector<std::uint8_t> q(x.size());
  const float scale = fp8_quantize(x.data(), std::int64_t(x.size()), q.data());
  CHECK(scale == 3.0f / 448.0f);
  CHECK(q[1] == 0xfe);  // -448
  CHECK(q[3] == 0x00);
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(q[i] == float_to_e4m3(x[i] / scale));
  std::vector<float> zeros(7, 0.0f);
  std::vector<std::uint8_t> qz(zeros.size(), 0xff);
  CHECK(fp8_quantize(zeros.data(), 7, qz.data()) == 1.0f);
  for (const auto c : qz) CHECK(c == 0x00);
}

TEST_CASE("fp8_linear_twin is the product of the quantized values", "[kernels][fp8]") {
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int n = 3, in = 256, out = 17;
  std::vector<float> x(std::size_t(n) * in), w(std::size_t(out) * in);
  for (auto& v : x) v = normal(rng);
  for (auto& v : w) v = 0.05f * normal(rng);
  std::vector<std::uint8_t> x8(x.size()), w8(w.size());
  const float sx = fp8_quantize(x.data(), std::int64_t(x.size()), x8.data());
  const float sw = fp8_quantize(w.data(), std::int64_t(w.size()), w8.data());
  std::vector<float> y(std::size_t(n) * out);
  fp8_linear_twin(x8.data(), sx, w8.data(), sw, n, in, out, y.data());
  for (int t = 0; t < n; ++t) {
    for (int o = 0; o < out; ++o) {
      double exact = 0.0, bound = 0.0;
      for (int i = 0; i < in; ++i) {
        const double a = x[std::size_t(t) * in + i], b = w[std::size_t(o) * in + i];
        exact += a * b;
        // Each factor within half a step of 3 mantissa bits (relative 2^-4), or a
        // subnormal step of its scale.
        bound += (std::fabs(a) * 0x1p-4 + sx * 0x1p-10) * std::fabs(b) * 1.0625 + (std::fabs(b) * 0x1p-4 + sw * 0x1p-10) * std::fabs(a);
      }
      INFO("t " << t << " o " << o << " twin " << y[std::size_t(t) * out + o] << " exact " << exact << " bound " << bound);
      REQUIRE(std::fabs(y[std::size_t(t) * out + o] - exact) <= bound);
    }
  }
  double differs = 0.0;
  for (int o = 0; o < out; ++o) {
    double exact = 0.0;
    for (int i = 0; i < in; ++i) exact += double(x[i]) * w[std::size_t(o) * in + i];
    differs = std::max(differs, std::fabs(exact - y[std::size_t(o)]));
  }
  REQUIRE(differs > 1e-6);
}

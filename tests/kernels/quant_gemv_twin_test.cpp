// The CPU twin of the CUDA products over GGUF blocks (kernels/cpu/twins.hpp:
// quant_gemv_twin, the reference of the [gpu] test in tests/gpu/quant_matmul_test.cpp)
// against the portable CPU kernels on the same prepared inputs: the same integer sums, so
// the two differ only by the order of their fp32 operations.
#include <catch2/catch.hpp>

#include <cmath>

#include "kernels/cpu/twins.hpp"
#include "tests/kernels/quant_test_util.hpp"

using namespace inflight;
using namespace inflight::kernels::cpu;
using test::prepared_rows;
using test::random_floats;
using test::typed_matrix;

namespace {

/// Sum of |w_i x_i| over a row, x as the prepared row holds it (the scale of float rounding).
double abs_terms(const typed_matrix& m, int o, const prepared_rows& p, int t, int k, input_format format) {
  const std::byte* row = p.bytes.data() + t * p.stride;
  const int block = format == input_format::q8_0 ? 32 : 256;
  double s = 0.0;
  for (int i = 0; i < k; ++i) {
    float d;
    std::memcpy(&d, row + prepared_scales_offset(k) + 4 * (i / block), 4);
    s += std::abs(double(m.values[std::size_t(o) * k + i]) * double(d) * double(std::int8_t(row[i])));
  }
  return s;
}

}  // namespace

TEST_CASE("quant_gemv's twin equals the portable products on the same prepared inputs", "[kernels][quant]") {
  std::mt19937 rng(46);
  const auto& portable = portable_kernels();
  struct shape {
    int rows, k;
  };
  // 8 units (lanes 8..31 idle), 72 (lanes wrap to a third unit), 256 (8 per lane).
  for (const auto type : {weight_type::q8_0, weight_type::q4_0, weight_type::q4_k, weight_type::q6_k}) {
    for (const auto s : {shape{37, 256}, shape{5, 2304}, shape{3, 8192}}) {
      for (const int n : {1, 3, 8}) {
        DYNAMIC_SECTION(to_string(type) << " rows " << s.rows << " k " << s.k << " n " << n) {
          const typed_matrix m(type, random_floats(std::size_t(s.rows) * s.k, rng, 0.5f), s.rows, s.k);
          const auto x = random_floats(std::size_t(n) * s.k, rng, 2.0f);
          const prepared_rows p(portable, type, x, n, s.k);
          std::vector<float> want(std::size_t(n) * s.rows, 0.0f);
          typed_gemm(portable, {p.bytes.data(), p.stride, m.view(), want.data(), s.rows, n, s.k, false}, 0, s.rows);
          // Output rows ldy apart with a gap: the twin writes its cells and nothing else.
          const int ldy = s.rows + 3;
          std::vector<float> got(std::size_t(n) * ldy, -7.0f);
          quant_gemv_twin(m.view(), s.rows, s.k, p.bytes.data(), p.stride, n, got.data(), ldy);
          double worst = 0.0;
          for (int t = 0; t < n; ++t) {
            for (int o = 0; o < s.rows; ++o) {
              const double scale = abs_terms(m, o, p, t, s.k, input_of(type));
              const double diff = std::abs(double(got[std::size_t(t) * ldy + o]) - want[std::size_t(t) * s.rows + o]);
              INFO("t " << t << " o " << o << " twin " << got[std::size_t(t) * ldy + o] << " portable "
                        << want[std::size_t(t) * s.rows + o] << " sum |terms| " << scale);
              REQUIRE(diff <= 1e-5 * scale + 1e-30);
              worst = std::max(worst, diff / std::max(scale, 1e-30));
            }
            for (int o = s.rows; o < ldy; ++o) REQUIRE(got[std::size_t(t) * ldy + o] == -7.0f);
          }
          // Not one product equal by accident: the rows are far from zero next to the rounding.
          REQUIRE(worst < 1e-5);
        }
      }
    }
  }
}

TEST_CASE("quant_gemv's twin tells a wrong level from a right one", "[kernels][quant]") {
  // One weight level changed: the twin's result moves by that level's term, far past
  // the rounding the previous case allows (a twin reading levels wrongly would fail it).
  std::mt19937 rng(47);
  const auto& portable = portable_kernels();
  for (const auto type : {weight_type::q8_0, weight_type::q4_0, weight_type::q4_k, weight_type::q6_k}) {
    const int k = 512;
    typed_matrix m(type, random_floats(std::size_t(k), rng, 0.5f), 1, k);
    const auto x = random_floats(std::size_t(k), rng, 2.0f);
    const prepared_rows p(portable, type, x, 1, k);
    float before = 0.0f, after = 0.0f;
    quant_gemv_twin(m.view(), 1, k, p.bytes.data(), p.stride, 1, &before, 1);
    // Flip a bit of a quantized level in the second block's level bytes.
    const std::int64_t at = type == weight_type::q8_0 ? 34 + 2 + 5 : type == weight_type::q4_0 ? 18 + 2 + 5
                          : type == weight_type::q4_k ? 144 + 16 + 40 : 210 + 70;
    m.bytes[std::size_t(1 + at)] ^= std::byte{0x04};
    quant_gemv_twin(m.view(), 1, k, p.bytes.data(), p.stride, 1, &after, 1);
    float changed = 0.0f;
    m.values.assign(std::size_t(k), 0.0f);
    (void)dequantize_row(weight_dtype(int(type)), m.view().data, k, m.values.data());
    typed_gemm(portable, {p.bytes.data(), p.stride, m.view(), &changed, 1, 1, k, false}, 0, 1);
    INFO(to_string(type) << " before " << before << " after " << after << " portable after " << changed);
    REQUIRE(before != after);
    REQUIRE(std::abs(double(after) - changed) <= 1e-5 * (std::abs(double(changed)) + std::abs(double(before))) + 1e-6);
  }
}

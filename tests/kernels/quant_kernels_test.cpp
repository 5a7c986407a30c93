// The products over quantized and half-precision weights, in every kernel table this
// CPU runs, against a plain reference: core's dequantized weights times the inputs in
// double. Tolerances come from the inputs' quantization (each table prepares them the
// same way) plus float rounding.
#include <catch2/catch.hpp>

#include <algorithm>

#include "tests/kernels/quant_test_util.hpp"

using namespace inflight;
using namespace inflight::kernels::cpu;
using test::prepared_rows;
using test::random_floats;
using test::runnable_isas;
using test::typed_matrix;

namespace {

/// The inputs as the products see them: x dequantized from its prepared row.
std::vector<double> prepared_values(weight_type type, const prepared_rows& p, int t, int k) {
  const std::byte* row = p.bytes.data() + t * p.stride;
  std::vector<double> out(static_cast<std::size_t>(k));
  const auto format = input_of(type);
  for (int i = 0; i < k; ++i) {
    if (format == input_format::f32) {
      out[i] = reinterpret_cast<const float*>(row)[i];
    } else if (format == input_format::bf16) {
      std::uint16_t h;
      std::memcpy(&h, row + 2 * i, 2);
      out[i] = kernels::cpu::bf16_to_float(h);
    } else {
      const int block = format == input_format::q8_0 ? 32 : 256;
      float d;
      std::memcpy(&d, row + prepared_scales_offset(k) + 4 * (i / block), 4);
      out[i] = double(d) * double(std::int8_t(row[i]));
    }
  }
  return out;
}

/// Largest error the inputs' preparation may cause in w . x (rows of k): half a
/// quantization step per value, or bf16's relative rounding.
double preparation_bound(weight_type type, const float* w, const float* x, int k) {
  const auto format = input_of(type);
  double bound = 0.0;
  if (format == input_format::f32) return 0.0;
  if (format == input_format::bf16) {
    for (int i = 0; i < k; ++i) bound += std::abs(double(w[i]) * x[i]) * 0x1p-8;
    return bound;
  }
  const int block = format == input_format::q8_0 ? 32 : 256;
  for (int b = 0; b < k; b += block) {
    double amax = 0.0, wsum = 0.0;
    for (int i = b; i < b + block; ++i) amax = std::max(amax, std::abs(double(x[i]))), wsum += std::abs(double(w[i]));
    bound += amax / 127.0 * 0.5 * 1.001 * wsum;
  }
  return bound;
}

struct gemm_case {
  int out, k, n, row_begin, row_end;
};

void check_gemm(cpu_isa isa, weight_type type, const gemm_case& g, float w_scale, float x_scale, std::mt19937& rng) {
  const auto& table = kernels_for(isa);
  const typed_matrix m(type, random_floats(std::size_t(g.out) * g.k, rng, w_scale), g.out, g.k);
  const auto x = random_floats(std::size_t(g.n) * g.k, rng, x_scale);
  const prepared_rows p(table, type, x, g.n, g.k);
  for (bool accumulate : {false, true}) {
    auto y = random_floats(std::size_t(g.n) * g.out, rng);
    const auto before = y;
    typed_gemm(table, {p.bytes.data(), p.stride, m.view(), y.data(), g.out, g.n, g.k, accumulate}, g.row_begin,
               g.row_end);
    for (int t = 0; t < g.n; ++t) {
      const auto xp = prepared_values(type, p, t, g.k);
      for (int o = 0; o < g.out; ++o) {
        const float got = y[std::size_t(t) * g.out + o], old = before[std::size_t(t) * g.out + o];
        INFO(to_string(isa) << " " << to_string(type) << " out " << g.out << " k " << g.k << " n " << g.n << " t " << t
                            << " o " << o << " accumulate " << accumulate);
        if (o < g.row_begin || o >= g.row_end) {
          REQUIRE(got == old);  // rows outside the slice are untouched
          continue;
        }
        const float* w = m.values.data() + std::size_t(o) * g.k;
        const float* xt = x.data() + std::size_t(t) * g.k;
        double exact = 0.0, prepared = 0.0, magnitude = 0.0;
        for (int i = 0; i < g.k; ++i) {
          exact += double(w[i]) * xt[i];
          prepared += double(w[i]) * xp[i];
          magnitude += std::abs(double(w[i]) * xp[i]);
        }
        const double base = accumulate ? old : 0.0;
        // Against the prepared inputs: float rounding only (a few units per block sum).
        const double rounding = 2e-6 * magnitude * std::sqrt(double(g.k) / 16.0 + 1.0) + 1e-6 * std::abs(base) + 1e-37;
        REQUIRE(std::abs(got - (base + prepared)) <= rounding);
        // Against the exact inputs: within the preparation's own error.
        REQUIRE(std::abs(got - (base + exact)) <= rounding + preparation_bound(type, w, xt, g.k));
      }
    }
  }
}

int block_of(weight_type type) { return layout_of(type).block_values; }

}  // namespace

TEST_CASE("typed gemm of every table and type equals dequantize-then-f32, odd shapes and slices",
          "[kernels][quant]") {
  std::mt19937 rng(21);
  for (auto isa : runnable_isas()) {
    for (auto type : test::typed_weight_types()) {
      const int b = std::max(block_of(type), 32);
      for (const gemm_case& g : {gemm_case{1, b, 1, 0, 1}, gemm_case{37, 3 * b, 5, 3, 34}, gemm_case{21, b, 21, 0, 21},
                                 gemm_case{40, 4 * b, 2, 17, 40}, gemm_case{19, 2 * b, 33, 5, 6}}) {
        check_gemm(isa, type, g, 0.5f, 1.0f, rng);
      }
    }
  }
}

TEST_CASE("typed gemm with rows of small magnitude: tiny weights and inputs, zero inputs", "[kernels][quant]") {
  std::mt19937 rng(8);
  for (auto isa : runnable_isas()) {
    for (auto type : test::typed_weight_types()) {
      const int b = std::max(block_of(type), 32);
      // Weights near fp16's smallest normal scale, inputs of order 1e-20.
      check_gemm(isa, type, {18, 2 * b, 3, 0, 18}, 1e-4f, 1e-20f, rng);
      // A zero input row gives exactly zero (and leaves an accumulated row as it was).
      const typed_matrix m(type, random_floats(std::size_t(5) * b, rng), 5, b);
      const std::vector<float> zeros(std::size_t(b), 0.0f);
      const prepared_rows p(kernels_for(isa), type, zeros, 1, b);
      std::vector<float> y = {1.5f, -2.0f, 3.0f, 0.25f, 7.0f};
      const auto before = y;
      typed_gemm(kernels_for(isa), {p.bytes.data(), p.stride, m.view(), y.data(), 5, 1, b, true}, 0, 5);
      INFO(to_string(isa) << " " << to_string(type));
      CHECK(y == before);
    }
  }
}

TEST_CASE("typed gemm rows are batch-invariant: the same bits alone, in any batch, any slice", "[kernels][quant]") {
  std::mt19937 rng(5);
  for (auto isa : runnable_isas()) {
    const auto& table = kernels_for(isa);
    for (auto type : test::typed_weight_types()) {
      const int k = 2 * std::max(block_of(type), 32) + (block_of(type) == 1 ? 7 : 0), out = 37, n = 11;
      const typed_matrix m(type, random_floats(std::size_t(out) * k, rng), out, k);
      const auto x = random_floats(std::size_t(n) * k, rng);
      const prepared_rows p(table, type, x, n, k);
      std::vector<float> whole(std::size_t(n) * out);
      typed_gemm(table, {p.bytes.data(), p.stride, m.view(), whole.data(), out, n, k, false}, 0, out);
      INFO(to_string(isa) << " " << to_string(type));
      for (int t = 0; t < n; ++t) {
        std::vector<float> alone(static_cast<std::size_t>(out));
        typed_gemm(table, {p.bytes.data() + t * p.stride, p.stride, m.view(), alone.data(), out, 1, k, false}, 0, out);
        CHECK(std::memcmp(alone.data(), whole.data() + std::size_t(t) * out, alone.size() * 4) == 0);
      }
      std::vector<float> sliced(whole.size());
      for (int r = 0; r < out; r += 5) {
        typed_gemm(table, {p.bytes.data(), p.stride, m.view(), sliced.data(), out, n, k, false}, r, std::min(out, r + 5));
      }
      CHECK(std::memcmp(sliced.data(), whole.data(), whole.size() * 4) == 0);
    }
  }
}

TEST_CASE("integer types give the same bits on every vector table, and inputs the same bytes on every table",
          "[kernels][quant]") {
  std::mt19937 rng(13);
  const int out = 29, n = 7, k = 1024 + 256;  // more than one chunk of decoded blocks
  for (auto type : {weight_type::q8_0, weight_type::q4_0, weight_type::q5_0, weight_type::q4_k, weight_type::q5_k,
                    weight_type::q6_k, weight_type::q2_k, weight_type::q3_k}) {
    const typed_matrix m(type, random_floats(std::size_t(out) * k, rng), out, k);
    const auto x = random_floats(std::size_t(n) * k, rng, 3.0f);
    const prepared_rows reference(kernels_for(cpu_isa::portable), type, x, n, k);
    std::vector<float> first;
    for (auto isa : runnable_isas()) {
      const prepared_rows p(kernels_for(isa), type, x, n, k);
      INFO(to_string(isa) << " " << to_string(type));
      CHECK(p.bytes == reference.bytes);
      if (isa == cpu_isa::portable) continue;
      std::vector<float> y(std::size_t(n) * out);
      typed_gemm(kernels_for(isa), {p.bytes.data(), p.stride, m.view(), y.data(), out, n, k, false}, 0, out);
      if (first.empty()) first = y;
      CHECK(std::memcmp(y.data(), first.data(), y.size() * 4) == 0);
    }
  }
}

TEST_CASE("prepared inputs: scales, sums and bf16 rows, a row prepared in column slices equals the whole",
          "[kernels][quant]") {
  std::mt19937 rng(17);
  const int k = 768, n = 3;
  auto x = random_floats(std::size_t(n) * k, rng);
  for (int i = 0; i < 32; ++i) x[32 + i] = 0.0f;  // an all-zero block
  for (auto isa : runnable_isas()) {
    const auto& table = kernels_for(isa);
    for (auto format : {input_format::bf16, input_format::q8_0, input_format::q8_k}) {
      const std::int64_t stride = prepared_row_bytes(format, k);
      std::vector<std::byte> whole(std::size_t(stride * n)), sliced(whole.size());
      table.prepare[int(format)]({x.data(), k, n, k, 0, k, whole.data(), stride});
      table.prepare[int(format)]({x.data(), k, n, k, 0, 256, sliced.data(), stride});
      table.prepare[int(format)]({x.data(), k, n, k, 256, k, sliced.data(), stride});
      INFO(to_string(isa) << " " << to_string(format));
      CHECK(whole == sliced);
      if (format == input_format::bf16) continue;
      const int block = format == input_format::q8_0 ? 32 : 256, span = format == input_format::q8_0 ? 32 : 16;
      for (int t = 0; t < n; ++t) {
        const std::byte* row = whole.data() + t * stride;
        for (int b = 0; b < k / block; ++b) {
          float d, amax = 0.0f;
          std::memcpy(&d, row + prepared_scales_offset(k) + 4 * b, 4);
          for (int i = b * block; i < (b + 1) * block; ++i) amax = std::max(amax, std::abs(x[std::size_t(t) * k + i]));
          REQUIRE(d == amax / 127.0f);
          for (int i = b * block; i < (b + 1) * block; ++i) {
            REQUIRE(std::abs(double(d) * std::int8_t(row[i]) - x[std::size_t(t) * k + i]) <= 0.5 * d * 1.0001);
          }
        }
        for (int s = 0; s < k / span; ++s) {
          int sum = 0, stored = 0;
          for (int i = s * span; i < (s + 1) * span; ++i) sum += std::int8_t(row[i]);
          const std::byte* at = row + prepared_sums_offset(format, k);
          if (span == 32) {
            std::memcpy(&stored, at + 4 * s, 4);
          } else {
            std::int16_t v;
            std::memcpy(&v, at + 2 * s, 2);
            stored = v;
          }
          REQUIRE(stored == sum);
        }
      }
    }
  }
}

TEST_CASE("dequantize_row of every table is the reference (dtypes/dequantize.hpp)", "[kernels][quant]") {
  std::mt19937 rng(19);
  for (auto isa : runnable_isas()) {
    for (auto type : test::typed_weight_types()) {
      const int k = 512;
      const typed_matrix m(type, random_floats(std::size_t(3) * k, rng), 3, k);
      std::vector<float> got(static_cast<std::size_t>(k));
      for (int r = 0; r < 3; ++r) {
        kernels_for(isa).weights[int(type)].dequantize_row(m.view().data + r * m.view().row_bytes, k, got.data());
        INFO(to_string(isa) << " " << to_string(type) << " row " << r);
        CHECK(std::memcmp(got.data(), m.values.data() + std::size_t(r) * k, got.size() * 4) == 0);
      }
    }
  }
}

TEST_CASE("typed gemm writes only the rows it is asked for: guards around the output stay untouched",
          "[kernels][quant]") {
  // A kernel whose last (or first) group of rows ran one row too far would write into
  // its neighbour's rows, or past the end of the output.
  std::mt19937 rng(23);
  constexpr int out = 13, guard = 8;
  constexpr float sentinel = -1234.5f;
  const std::vector<std::pair<int, int>> slices = {{0, 13}, {0, 1}, {3, 4}, {2, 5}, {1, 6},
                                                   {4, 12}, {5, 12}, {9, 13}, {12, 13}};
  for (auto isa : runnable_isas()) {
    const auto& table = kernels_for(isa);
    for (auto type : test::typed_weight_types()) {
      const int k = 2 * std::max(block_of(type), 256);
      const typed_matrix m(type, random_floats(std::size_t(out) * k, rng), out, k);
      for (int n : {1, 2}) {
        const prepared_rows p(table, type, random_floats(std::size_t(n) * k, rng), n, k);
        std::vector<float> whole(std::size_t(n) * out);
        typed_gemm(table, {p.bytes.data(), p.stride, m.view(), whole.data(), out, n, k, false}, 0, out);
        for (const auto& [begin, end] : slices) {
          INFO(to_string(isa) << " " << to_string(type) << " n " << n << " rows [" << begin << ", " << end << ")");
          std::vector<float> y(whole.size() + 2 * guard, sentinel);
          typed_gemm(table, {p.bytes.data(), p.stride, m.view(), y.data() + guard, out, n, k, false}, begin, end);
          for (std::size_t i = 0; i < y.size(); ++i) {
            const int at = int(i) - guard;  // token at / out, row at % out
            const bool is_asked = at >= 0 && at < n * out && at % out >= begin && at % out < end;
            INFO("float " << at << " of the output");
            if (is_asked) {
              REQUIRE(y[i] == whole[std::size_t(at)]);
            } else {
              REQUIRE(y[i] == sentinel);
            }
          }
        }
      }
    }
  }
}

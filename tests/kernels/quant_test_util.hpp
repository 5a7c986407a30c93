#pragma once
// Shared helpers of the quantized-kernel tests: random matrices quantized with core's
// reference, the kernel tables this CPU runs, and prepared inputs.

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/model/quant/quantize.hpp"
#include "kernels/cpu/cpu_isa.hpp"

namespace inflight::test {

namespace kc = inflight::kernels::cpu;

inline std::vector<kc::cpu_isa> runnable_isas() {
  std::vector<kc::cpu_isa> out;
  for (int i = 0; i < kc::num_cpu_isas; ++i) {
    if (kc::can_run(kc::cpu_isa(i))) out.push_back(kc::cpu_isa(i));
  }
  return out;
}

inline std::vector<float> random_floats(std::size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

/// A [rows x cols] matrix in one weight type (quantized by core's reference), and its
/// values as core's reference reads them back.
struct typed_matrix {
  kc::weight_type type;
  int rows = 0, cols = 0;
  std::vector<std::byte> bytes;
  std::vector<float> values;  ///< dequantized, [rows x cols]

  typed_matrix(kc::weight_type t, const std::vector<float>& dense, int r, int c) : type(t), rows(r), cols(c) {
    const auto dtype = weight_dtype(int(t));
    const std::int64_t rb = inflight::row_bytes(t, c);
    bytes.resize(std::size_t(rb * r) + 64);  // slack: the view starts at an odd offset
    values.resize(std::size_t(r) * c);
    for (int o = 0; o < r; ++o) {
      auto* row = bytes.data() + 1 + o * rb;
      (void)quantize_row(dtype, dense.data() + std::size_t(o) * c, c, row);
      (void)dequantize_row(dtype, row, c, values.data() + std::size_t(o) * c);
    }
  }
  /// Starts at byte 1 of the buffer: no alignment, as in a mapped file.
  kc::weight_view view() const { return {bytes.data() + 1, inflight::row_bytes(type, cols), type}; }
};

/// n input rows of k floats prepared by `table` in the input format of `type`.
struct prepared_rows {
  std::vector<std::byte> bytes;
  std::int64_t stride = 0;

  prepared_rows(const kc::cpu_kernel_table& table, kc::weight_type type, const std::vector<float>& x, int n, int k) {
    const auto format = kc::input_of(type);
    if (format == kc::input_format::f32) {
      stride = std::int64_t(k) * 4;
      bytes.resize(x.size() * 4);
      std::memcpy(bytes.data(), x.data(), bytes.size());
      return;
    }
    stride = kc::prepared_row_bytes(format, k);
    bytes.assign(std::size_t(stride * n), std::byte{0x5a});
    table.prepare[int(format)]({x.data(), k, n, k, 0, k, bytes.data(), stride});
  }
};

inline const std::vector<kc::weight_type>& typed_weight_types() {
  static const std::vector<kc::weight_type> types = {kc::weight_type::f16,  kc::weight_type::bf16,
                                                     kc::weight_type::q8_0, kc::weight_type::q4_0,
                                                     kc::weight_type::q4_k, kc::weight_type::q5_k,
                                                     kc::weight_type::q6_k, kc::weight_type::q5_0,
                                                     kc::weight_type::q4_1, kc::weight_type::q5_1,
                                                     kc::weight_type::iq4_nl, kc::weight_type::iq4_xs,
                                                     kc::weight_type::q2_k, kc::weight_type::q3_k,
                                                     kc::weight_type::mxfp4};
  return types;
}

}  // namespace inflight::test

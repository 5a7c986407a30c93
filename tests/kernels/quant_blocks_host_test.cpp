// The CUDA GEMV's block decoding (kernels/cuda/quant_blocks.cuh) compiled for the host:
// the kernel's lanes run here one after the other, then its butterfly, and must give the
// bits of kernels::cpu::quant_gemv_twin, which reads the levels through dtypes'
// definitions instead of packed words. The dequantized values must be dtypes' values.
// What only a GPU checks: the launch, the warp shuffles, dp4a itself.
#include <catch2/catch.hpp>

#include <cstring>

#include "kernels/cpu/twins.hpp"
#include "kernels/cuda/quant_blocks.cuh"
#include "tests/kernels/quant_test_util.hpp"

using namespace inflight;
using namespace inflight::kernels::cpu;
namespace qb = inflight::kernels::cuda::quant_blocks;
using test::prepared_rows;
using test::random_floats;
using test::typed_matrix;

namespace {

/// quant_gemv_kernel's arithmetic for one (row, token): lane l over units l, l + 32, ...,
/// then v += shfl_xor(v, o) for o = 16, 8, 4, 2, 1.
template <weight_type W>
float kernel_on_host(const std::byte* row, const std::byte* x, int cols) {
  const std::int64_t scales = prepared_scales_offset(cols), sums = prepared_sums_offset(input_of(W), cols);
  float lanes[32];
  for (int l = 0; l < 32; ++l) {
    lanes[l] = 0.0f;
    for (int u = l; u < cols / 32; u += 32) {
      const qb::unit_of<W> unit(row, u);
      lanes[l] = qb::unit_product<W>(unit, x, u, scales, sums, lanes[l]);
    }
  }
  for (int o = 16; o > 0; o /= 2) {
    float next[32];
    for (int l = 0; l < 32; ++l) next[l] = lanes[l] + lanes[l ^ o];
    std::memcpy(lanes, next, sizeof(lanes));
  }
  return lanes[0];
}

template <weight_type W>
void check_type(std::mt19937& rng) {
  const auto& portable = portable_kernels();
  for (const int k : {256, 2304, 8192}) {
    const int rows = 7, n = 3;
    const typed_matrix m(W, random_floats(std::size_t(rows) * k, rng, 0.5f), rows, k);
    const auto x = random_floats(std::size_t(n) * k, rng, 2.0f);
    const prepared_rows p(portable, W, x, n, k);
    std::vector<float> want(std::size_t(n) * rows);
    quant_gemv_twin(m.view(), rows, k, p.bytes.data(), p.stride, n, want.data(), rows);
    // The rows packed from an aligned start, as on the device.
    const auto rb = m.view().row_bytes;
    std::vector<std::byte> packed(std::size_t(rb * rows));
    std::memcpy(packed.data(), m.view().data, packed.size());
    for (int t = 0; t < n; ++t) {
      for (int o = 0; o < rows; ++o) {
        const float got = kernel_on_host<W>(packed.data() + o * rb, p.bytes.data() + t * p.stride, k);
        const float w = want[std::size_t(t) * rows + o];
        INFO(to_string(W) << " k " << k << " t " << t << " o " << o << " kernel " << got << " twin " << w);
        REQUIRE(std::memcmp(&got, &w, sizeof(float)) == 0);
      }
    }
    // Every value of every row as dtypes reads it.
    for (int o = 0; o < rows; ++o) {
      for (int i = 0; i < k; ++i) {
        const float got = qb::value_at(W, packed.data() + o * rb, i), w = m.values[std::size_t(o) * k + i];
        if (std::memcmp(&got, &w, sizeof(float)) != 0) {
          INFO(to_string(W) << " row " << o << " value " << i << ": " << got << " vs " << w);
          REQUIRE(got == w);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("the cuda GEMV's block decoding, run on the host, gives its twin's bits", "[kernels][quant]") {
  std::mt19937 rng(50);
  check_type<weight_type::q8_0>(rng);
  check_type<weight_type::q4_0>(rng);
  check_type<weight_type::q4_k>(rng);
  check_type<weight_type::q6_k>(rng);
}

// FP8 E4M3 on the device (kernels/cuda/fp8.hpp, blas::fp8_linear, engine.cuda_weights =
// "fp8") against the CPU twins (kernels/cpu/twins.hpp: fp8_quantize, fp8_linear_twin):
// the scale and codes byte for byte, the product within fp32 accumulation of exact
// E4M3 products, and a model's logits against the cpu backend on the unquantized weights.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>

#include "backends/cpu_backend.hpp"
#include "backends/cuda_backend.hpp"
#include "core/model/formats/dummy_model.hpp"
#include "kernels/cpu/twins.hpp"
#include "kernels/cuda/fp8.hpp"
#include "kernels/cuda/gemm.hpp"
#include "tests/gpu/backend_steps.hpp"
#include "tests/test_shapes.hpp"

using namespace inflight;
using namespace inflight::test::gpu;
namespace cpu = inflight::kernels::cpu;

namespace {

std::vector<std::uint8_t> download_u8(const kc::device_buffer& b, std::size_t n) {
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  std::vector<std::uint8_t> v(n);
  REQUIRE(cudaMemcpy(v.data(), b.as(), n, cudaMemcpyDeviceToHost) == cudaSuccess);
  return v;
}

}  // namespace

TEST_CASE("fp8 scale and codes on the device are the cpu twin's", "[gpu][fp8]") {
  require_device();
  std::mt19937 rng(80);
  for (const auto dt : {kc::dtype::bf16, kc::dtype::f16}) {
    for (const std::int64_t n : {1ll, 1000ll, 3ll * 4096 + 7}) {
      // Values the device reads: rounded to dt, spread over many binades (subnormal codes too).
      auto x = random_floats(std::size_t(n), rng, 3.0f);
      for (std::size_t i = 0; i < x.size(); i += 3) x[i] *= 1e-4f;
      x = rounded(x, dt);
      std::vector<std::uint8_t> want(x.size());
      const float want_scale = cpu::fp8_quantize(x.data(), n, want.data());
      auto d_x = upload(x, dt);
      kc::device_buffer d_scales, d_out;
      require_ok(d_scales.try_allocate(2 * sizeof(float)));
      require_ok(d_out.try_allocate(x.size()));
      require_ok(kc::fp8_scale(kc::fp8_source_of(dt), d_x.as(), n, d_scales.as<float>(), d_scales.as<float>() + 1, nullptr));
      require_ok(kc::to_fp8(kc::fp8_source_of(dt), d_x.as(), n, d_scales.as<float>() + 1, d_out.as<std::uint8_t>(), nullptr));
      const auto scales = download_f32(d_scales, 2);
      INFO(name_of(dt) << " n " << n);
      REQUIRE(scales[1] == want_scale);
      REQUIRE(download_u8(d_out, x.size()) == want);
    }
  }
  // fp32 input (the weights' upload path) and an all-zero tensor (scale 1).
  std::vector<float> zeros(64, 0.0f);
  auto d_z = upload_f32(zeros);
  kc::device_buffer d_scales;
  require_ok(d_scales.try_allocate(2 * sizeof(float)));
  require_ok(kc::fp8_scale(kc::fp8_source::f32, d_z.as(), 64, d_scales.as<float>(), d_scales.as<float>() + 1, nullptr));
  REQUIRE(download_f32(d_scales, 2)[1] == 1.0f);
}

TEST_CASE("fp8_linear (cuBLASLt) computes the product of the codes and scales", "[gpu][fp8]") {
  require_device();
  int major = 0;
  REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess);
  if (major < 9) FAIL("fp8 products need sm_89 or later; this device is sm_" << major << "x");
  std::mt19937 rng(81);
  kc::blas blas;
  require_ok(kc::blas::try_create(nullptr, 32u << 20, blas));
  for (const auto dt : {kc::dtype::bf16, kc::dtype::f16}) {
    for (const int n : {1, 7, 64, 300}) {
      const int in = 512, out = 96, ldy = out + 8;
      auto x = random_floats(std::size_t(n) * in, rng, 1.0f);
      auto w = random_floats(std::size_t(out) * in, rng, 0.05f);
      std::vector<std::uint8_t> x8(x.size()), w8(w.size());
      const float sx = cpu::fp8_quantize(x.data(), std::int64_t(x.size()), x8.data());
      const float sw = cpu::fp8_quantize(w.data(), std::int64_t(w.size()), w8.data());
      std::vector<float> want(std::size_t(n) * out);
      cpu::fp8_linear_twin(x8.data(), sx, w8.data(), sw, n, in, out, want.data());
      kc::device_buffer d_x8, d_w8, d_y;
      require_ok(d_x8.try_allocate(x8.size()));
      require_ok(d_w8.try_allocate(w8.size()));
      REQUIRE(cudaMemcpy(d_x8.as(), x8.data(), x8.size(), cudaMemcpyHostToDevice) == cudaSuccess);
      REQUIRE(cudaMemcpy(d_w8.as(), w8.data(), w8.size(), cudaMemcpyHostToDevice) == cudaSuccess);
      auto d_scales = upload_f32({sx, sw});
      require_ok(d_y.try_allocate(std::size_t(n) * ldy * 2));
      require_ok(blas.fp8_linear(dt, d_x8.as<std::uint8_t>(), d_scales.as<float>(), d_w8.as<std::uint8_t>(),
                                 d_scales.as<float>() + 1, d_y.as(), n, in, out, ldy));
      const auto got_rows = download(d_y, std::size_t(n) * ldy, dt);
      std::vector<float> got(std::size_t(n) * out);
      for (int t = 0; t < n; ++t) {
        std::copy_n(got_rows.begin() + std::ptrdiff_t(t) * ldy, out, got.begin() + std::ptrdiff_t(t) * out);
      }
      INFO(name_of(dt) << " n " << n);
      require_close(got, want, tolerance(dt));
    }
  }
}

TEST_CASE("cuda_weights = fp8: a model's logits stay near the cpu backend's", "[gpu][fp8]") {
  require_device();
  auto c = test::small_config(
      {.dim = 256, .hidden = 512, .layers = 2, .heads = 4, .kv_heads = 2, .vocab = 1000, .max_seq_len = 1024});
  auto weights = make_dummy_weights(c, 11);
  REQUIRE(weights.has_value());
  const auto w = std::make_shared<const model_weights>(std::move(*weights));
  auto cpu_be = cpu_backend::create(w, kv_cache_config{16, 64, 0});
  REQUIRE(cpu_be.has_value());
  const auto gpu = cuda_with(w, kernels::cuda::weight_format::fp8);
  const auto expanded = cuda_with(w, kernels::cuda::weight_format::expand);
  // The layers at one byte a weight, the embedding still in bf16.
  const std::int64_t layer_weights = std::int64_t(c.num_layers) * (c.dim * (c.dim + 2 * c.dim / 2) + c.dim * c.dim +
                                                                   3 * std::int64_t(c.dim) * c.hidden_dim);
  REQUIRE(expanded->weight_bytes() - gpu->weight_bytes() == layer_weights);
  const auto prompt = prompt_of(90, 4);
  // A prefill chunk, then one- and eight-token steps (graphs and not).
  const std::vector<std::pair<int, int>> ranges = {{0, 80}, {80, 81}, {81, 82}, {82, 90}};
  std::uint64_t id = 0;
  for (const auto& [begin, end] : ranges) {
    step_plan plan;
    plan.step_id = ++id;
    plan.seqs.push_back(step_of(1, prompt, begin, end, {0, 1, 2, 3, 4, 5}));
    plan.seqs.back().do_sample = true;
    require_same_logits(**cpu_be, *gpu, plan, 0.1f);
  }
}

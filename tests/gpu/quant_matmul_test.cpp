// Products over GGUF blocks on the device (kernels/cuda/quant_matmul.hpp) against the
// CPU: the prepared activations byte for byte, the GEMV against its twin
// (kernels/cpu/twins.hpp: the same operations in the same order, so the same bits), the
// dequantized rows against dtypes' definitions; then whole models in
// engine.cuda_weights = "file" against the cpu backend on the same quantized weights.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <memory>

#include "backends/cpu_backend.hpp"
#include "backends/cuda_backend.hpp"
#include "core/model/formats/dummy_model.hpp"
#include "kernels/cpu/cpu_isa.hpp"
#include "kernels/cpu/twins.hpp"
#include "kernels/cuda/quant_matmul.hpp"
#include "tests/gpu/backend_steps.hpp"
#include "tests/kernels/quant_test_util.hpp"
#include "tests/test_shapes.hpp"

using namespace inflight;
using namespace inflight::test::gpu;
namespace cpu = inflight::kernels::cpu;

namespace {

constexpr kc::dtype dtypes[] = {kc::dtype::bf16, kc::dtype::f16};
constexpr cpu::weight_type block_types[] = {cpu::weight_type::q8_0, cpu::weight_type::q4_0, cpu::weight_type::q4_k,
                                            cpu::weight_type::q6_k};

kc::device_buffer upload_bytes(const std::byte* data, std::size_t n) {
  kc::device_buffer b;
  require_ok(b.try_allocate(std::max<std::size_t>(1, n)));
  REQUIRE(cudaMemcpy(b.as(), data, n, cudaMemcpyHostToDevice) == cudaSuccess);
  return b;
}

std::vector<std::byte> download_bytes(const kc::device_buffer& b, std::size_t n) {
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  std::vector<std::byte> v(n);
  REQUIRE(cudaMemcpy(v.data(), b.as(), n, cudaMemcpyDeviceToHost) == cudaSuccess);
  return v;
}

/// The matrix's rows packed (the typed_matrix view starts at an odd offset).
kc::device_buffer upload_matrix(const test::typed_matrix& m) {
  const auto v = m.view();
  return upload_bytes(v.data, std::size_t(v.row_bytes) * std::size_t(m.rows));
}

kc::quant_matrix device_view(const test::typed_matrix& m, const kc::device_buffer& b) {
  return {m.type, b.as<std::byte>(), m.view().row_bytes, m.rows, m.cols};
}

}  // namespace

TEST_CASE("activations quantized on the device are the cpu's prepared bytes", "[gpu][quant]") {
  require_device();
  std::mt19937 rng(46);
  const auto& portable = cpu::portable_kernels();
  for (const auto dt : dtypes) {
    for (const auto format : {cpu::input_format::q8_0, cpu::input_format::q8_k}) {
      for (const int k : {256, 4096, 2304}) {
        DYNAMIC_SECTION(name_of(dt) << " " << cpu::to_string(format) << " k " << k) {
          const int n = 5;
          // The floats the device reads: x rounded to dt, with one all-zero block.
          auto x = rounded(random_floats(std::size_t(n) * k, rng, 3.0f), dt);
          std::fill_n(x.begin() + k, 256, 0.0f);
          const auto stride = cpu::prepared_row_bytes(format, k);
          std::vector<std::byte> want(std::size_t(stride) * n, std::byte{0x5a});
          portable.prepare[int(format)]({x.data(), k, n, k, 0, k, want.data(), stride});
          auto d_x = upload(x, dt);
          auto d_out = upload_bytes(want.data(), want.size());
          REQUIRE(cudaMemset(d_out.as(), 0x5a, want.size()) == cudaSuccess);
          require_ok(kc::quantize_activations(dt, d_x.as(), k, n, k, format, d_out.as<std::byte>(), stride, nullptr));
          const auto got = download_bytes(d_out, want.size());
          std::size_t first_diff = 0;
          while (first_diff < want.size() && got[first_diff] == want[first_diff]) ++first_diff;
          INFO("first differing byte " << first_diff << " of " << want.size() << " (row stride " << stride << ")");
          REQUIRE(first_diff == want.size());
        }
      }
    }
  }
}

TEST_CASE("quant_gemv gives its cpu twin's bits", "[gpu][quant]") {
  require_device();
  std::mt19937 rng(47);
  const auto& portable = cpu::portable_kernels();
  struct shape {
    int rows, k;
  };
  for (const auto type : block_types) {
    for (const auto s : {shape{37, 256}, shape{130, 2304}, shape{9, 8192}}) {
      for (const int n : {1, 3, 8}) {
        DYNAMIC_SECTION(to_string(type) << " rows " << s.rows << " k " << s.k << " n " << n) {
          const test::typed_matrix m(type, random_floats(std::size_t(s.rows) * s.k, rng, 0.5f), s.rows, s.k);
          const auto x = random_floats(std::size_t(n) * s.k, rng, 2.0f);
          const test::prepared_rows p(portable, type, x, n, s.k);
          const int ldy = s.rows + 3;
          std::vector<float> want(std::size_t(n) * ldy, 0.0f);
          cpu::quant_gemv_twin(m.view(), s.rows, s.k, p.bytes.data(), p.stride, n, want.data(), ldy);
          auto d_w = upload_matrix(m);
          auto d_x = upload_bytes(p.bytes.data(), p.bytes.size());
          // fp32 out: the twin's bits.
          kc::device_buffer d_y;
          require_ok(d_y.try_allocate(want.size() * sizeof(float)));
          REQUIRE(cudaMemset(d_y.as(), 0, want.size() * sizeof(float)) == cudaSuccess);
          require_ok(kc::quant_gemv(device_view(m, d_w), d_x.as<std::byte>(), p.stride, n, d_y.as(), true,
                                    kc::dtype::bf16, ldy, nullptr));
          const auto got = download_f32(d_y, want.size());
          for (std::size_t i = 0; i < want.size(); ++i) {
            INFO("cell " << i << " gpu " << got[i] << " twin " << want[i]);
            REQUIRE(std::memcmp(&got[i], &want[i], sizeof(float)) == 0);
          }
          // dt out: the twin's value rounded once.
          for (const auto dt : dtypes) {
            kc::device_buffer d_h;
            require_ok(d_h.try_allocate(want.size() * 2));
            REQUIRE(cudaMemset(d_h.as(), 0, want.size() * 2) == cudaSuccess);
            require_ok(kc::quant_gemv(device_view(m, d_w), d_x.as<std::byte>(), p.stride, n, d_h.as(), false, dt, ldy,
                                      nullptr));
            REQUIRE(download(d_h, want.size(), dt) == rounded(want, dt));
          }
        }
      }
    }
  }
}

TEST_CASE("quant_gemv refuses what it does not read", "[gpu][quant]") {
  require_device();
  std::mt19937 rng(48);
  const test::typed_matrix m(cpu::weight_type::q5_k, random_floats(256, rng), 1, 256);
  auto d_w = upload_matrix(m);
  kc::device_buffer d_y;
  require_ok(d_y.try_allocate(64));
  const kc::quant_matrix q5{cpu::weight_type::q5_k, d_w.as<std::byte>(), m.view().row_bytes, 1, 256};
  CHECK_FALSE(kc::quant_gemv(q5, d_w.as<std::byte>(), 0, 1, d_y.as(), true, kc::dtype::bf16, 1, nullptr).is_ok());
  const kc::quant_matrix ragged{cpu::weight_type::q4_k, d_w.as<std::byte>(), 144, 1, 200};
  CHECK_FALSE(kc::quant_gemv(ragged, d_w.as<std::byte>(), 0, 1, d_y.as(), true, kc::dtype::bf16, 1, nullptr).is_ok());
  const kc::quant_matrix q8{cpu::weight_type::q8_0, d_w.as<std::byte>(), 34, 1, 32};
  CHECK_FALSE(kc::quant_gemv(q8, d_w.as<std::byte>(), 0, kc::quant_gemv_max_tokens + 1, d_y.as(), true,
                             kc::dtype::bf16, 1, nullptr).is_ok());
}

TEST_CASE("dequantized rows and gathered rows are dtypes' values", "[gpu][quant]") {
  require_device();
  std::mt19937 rng(49);
  for (const auto type : block_types) {
    const int rows = 21, cols = 512;
    const test::typed_matrix m(type, random_floats(std::size_t(rows) * cols, rng), rows, cols);
    auto d_w = upload_matrix(m);
    const auto q = device_view(m, d_w);
    for (const auto dt : dtypes) {
      kc::device_buffer d_rows;
      require_ok(d_rows.try_allocate(std::size_t(rows) * cols * 2));
      require_ok(kc::dequantize_rows(q, 4, 17, dt, d_rows.as(), nullptr));
      const std::vector<float> slice(m.values.begin() + 4 * cols, m.values.begin() + 17 * cols);
      INFO(to_string(type) << " " << name_of(dt));
      REQUIRE(download(d_rows, slice.size(), dt) == rounded(slice, dt));
    }
    const std::vector<std::int32_t> ids = {20, 0, 7, 7, 13};
    auto d_ids = upload_i32(ids);
    kc::device_buffer d_out;
    require_ok(d_out.try_allocate(ids.size() * cols * sizeof(float)));
    require_ok(kc::dequantize_gather(q, d_ids.as<std::int32_t>(), int(ids.size()), d_out.as(), true, kc::dtype::bf16,
                                     nullptr));
    std::vector<float> want;
    for (const auto id : ids) want.insert(want.end(), m.values.begin() + id * cols, m.values.begin() + (id + 1) * cols);
    REQUIRE(download_f32(d_out, want.size()) == want);
  }
}

namespace {

std::shared_ptr<const model_weights> quantized_model(const char* recipe_name, bool tied) {
  auto c = test::small_config(
      {.dim = 256, .hidden = 512, .layers = 2, .heads = 4, .kv_heads = 2, .vocab = 1000, .max_seq_len = 1024});
  c.tied_embeddings = tied;
  auto recipe = try_parse_recipe(recipe_name);
  REQUIRE(recipe.has_value());
  auto w = make_dummy_weights(c, 7, &*recipe);
  REQUIRE(w.has_value());
  return std::make_shared<const model_weights>(std::move(*w));
}

/// A greedy sampled step (step_of's, sampled).
seq_step chunk(seq_id id, const std::vector<token_id>& p, int begin, int end, std::vector<block_id> blocks) {
  auto s = step_of(id, p, begin, end, std::move(blocks));
  s.do_sample = true;
  return s;
}

}  // namespace

TEST_CASE("cuda_weights = file: quantized models match the cpu backend, at the file's size", "[gpu][quant]") {
  require_device();
  // q4_k_m: q/k q4_k beside v q6_k in some layers (a fused projection of two parts), the
  // tied embedding q6_k (gathered and the classifier). q8_0 and q4_0: one part each.
  for (const auto* recipe : {"q4_k_m", "q8_0", "q4_0"}) {
    for (const bool tied : {true, false}) {
      DYNAMIC_SECTION(recipe << (tied ? " tied" : " untied")) {
        const auto w = quantized_model(recipe, tied);
        auto cpu = cpu_backend::create(w, kv_cache_config{16, 64, 0});
        REQUIRE(cpu.has_value());
        const auto gpu = cuda_with(w, kernels::cuda::weight_format::file);
        const auto expanded = cuda_with(w, kernels::cuda::weight_format::expand);
        INFO("weights on the gpu: file " << gpu->weight_bytes() << " bytes, expanded " << expanded->weight_bytes());
        REQUIRE(gpu->weight_bytes() * 10 < expanded->weight_bytes() * 6);  // q8_0: 34 of 64 bytes
        const auto a = prompt_of(120, 1), b = prompt_of(40, 2), c = prompt_of(20, 3);
        // A 100-token chunk (dequantized rows + cuBLAS), 9- and 12-token chunks (two GEMV
        // launches), named rows of a quantized classifier, then decode steps (one row, three).
        std::vector<step_plan> plans(2);
        plans[0].seqs.push_back(chunk(1, a, 0, 100, {0, 1, 2, 3, 4, 5, 6, 7}));
        plans[0].seqs.push_back(chunk(2, b, 0, 9, {8, 9}));
        plans[0].seqs.back().logit_rows = {10, 999};
        plans[0].seqs.back().do_sample = false;
        plans[1].seqs.push_back(chunk(3, c, 0, 12, {10, 11}));
        plans[1].seqs.push_back(chunk(2, b, 9, 30, {8, 9}));
        for (int t = 100; t < 104; ++t) {
          step_plan one;
          one.seqs.push_back(chunk(1, a, t, t + 1, {0, 1, 2, 3, 4, 5, 6, 7}));
          if (t >= 102) {
            one.seqs.push_back(chunk(2, b, t - 72, t - 71, {8, 9}));
            one.seqs.push_back(chunk(3, c, t - 90, t - 89, {10, 11}));
          }
          plans.push_back(one);
        }
        for (std::size_t i = 0; i < plans.size(); ++i) {
          plans[i].step_id = i + 1;
          require_same_logits(**cpu, *gpu, plans[i], 0.05f);
        }

      }
    }
  }
}

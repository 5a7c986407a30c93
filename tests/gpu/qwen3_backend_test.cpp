// A Qwen3-shaped model (dummy weights, q/k norms far from 1) on the cuda backend
// against the cpu backend: the full logits of sampled rows and the named logit rows of
// scored ones, over a batch that mixes both with a chunked prefill.
#include <catch2/catch.hpp>

#include <memory>
#include <random>

#include "backends/cpu_backend.hpp"
#include "backends/cuda_backend.hpp"
#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/shapes.hpp"
#include "tests/gpu/backend_steps.hpp"
#include "tests/test_shapes.hpp"

using namespace inflight;
using namespace inflight::test::gpu;

namespace {

std::shared_ptr<const model_weights> qwen3_weights() {
  auto c = test::small_qwen3_config(
      {.dim = 256, .hidden = 512, .layers = 3, .heads = 8, .kv_heads = 2, .vocab = 1000, .max_seq_len = 1024});
  c.norm_eps = 1e-6f;
  c.rope_theta = 1000000.0f;
  auto w = make_dummy_weights(c, 5);
  REQUIRE(w.has_value());
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> scale(0.5f, 2.0f);
  for (auto& l : w->layers)
    for (auto* v : {&l.q_norm, &l.k_norm}) for (auto& x : *v) x = scale(rng);
  return std::make_shared<const model_weights>(std::move(*w));
}

}  // namespace

TEST_CASE("qwen3 on the cuda backend: full logits and named rows match the cpu backend", "[gpu]") {
  require_device();
  const auto w = qwen3_weights();
  auto cpu = cpu_backend::create(w, kv_cache_config{16, 64, 0});
  REQUIRE(cpu.has_value());
  cuda_backend_options o;
  o.num_kv_blocks = 64;
  o.max_num_seqs = 8;
  auto gpu = cuda_backend::create(w, o);
  INFO((gpu ? std::string() : gpu.error().message));
  REQUIRE(gpu.has_value());
  const auto a = prompt_of(70, 1), b = prompt_of(33, 2), c = prompt_of(50, 3);
  const std::vector<step_plan> plans = [&] {
    step_plan first;
    first.step_id = 1;
    first.seqs.push_back(step_of(1, a, 0, 40, {0, 1, 2, 3, 4}));
    first.seqs.push_back(step_of(2, b, 0, 33, {5, 6, 7}));
    first.seqs.back().logit_rows = {10, 999};
    first.seqs.push_back(step_of(3, c, 0, 50, {8, 9, 10, 11}));
    first.seqs.back().do_sample = true;
    step_plan second;
    second.step_id = 2;
    second.seqs.push_back(step_of(1, a, 40, 70, {0, 1, 2, 3, 4}));
    second.seqs.back().logit_rows = {10, 999, 500};
    return std::vector<step_plan>{first, second};
  }();
  for (const auto& plan : plans) require_same_logits(**cpu, **gpu, plan, 0.05f);
}

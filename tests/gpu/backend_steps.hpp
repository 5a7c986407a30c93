#pragma once
// Helpers of the [gpu] tests that run a model on the cuda backend beside the cpu backend:
// prompts of random token ids, greedy steps of them, and one plan on both backends.
#include <catch2/catch.hpp>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda_backend.hpp"
#include "core/engine/step/step_plan.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace inflight::test::gpu {

/// `length` token ids in [3, 993) from `seed`.
inline std::vector<token_id> prompt_of(int length, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<token_id> p(static_cast<std::size_t>(length));
  for (auto& t : p) t = token_id(3 + rng() % 990);
  return p;
}

/// Tokens [begin, end) of p as one greedy step of sequence `id` (not sampled).
inline seq_step step_of(seq_id id, const std::vector<token_id>& p, int begin, int end, std::vector<block_id> blocks) {
  seq_step s;
  s.id = id;
  s.tokens.assign(p.begin() + begin, p.begin() + end);
  s.start_position = begin;
  s.block_table = std::move(blocks);
  s.params.temperature = 0.0f;
  return s;
}

/// A cuda backend of 64 KV blocks and 8 sequences with the weights in `format`.
inline std::unique_ptr<cuda_backend> cuda_with(const std::shared_ptr<const model_weights>& w,
                                              kernels::cuda::weight_format format) {
  cuda_backend_options o;
  o.num_kv_blocks = 64;
  o.max_num_seqs = 8;
  o.weights = format;
  auto gpu = cuda_backend::create(w, o);
  INFO((gpu ? std::string() : gpu.error().message));
  REQUIRE(gpu.has_value());
  return std::move(*gpu);
}

/// `plan` on both backends: the gpu's full logits, and its named rows when the backend
/// has them, within tol * (1 + |cpu's|).
template <class Cpu, class Gpu>
void require_same_logits(Cpu& cpu, Gpu& gpu, const step_plan& plan, float tol) {
  auto want = cpu.forward(plan);
  REQUIRE(want.has_value());
  const std::vector<float> want_full(want->begin(), want->end());
  const std::vector<float> want_rows(cpu.row_logits().begin(), cpu.row_logits().end());
  auto got = gpu.forward(plan);
  INFO("step " << plan.step_id << (got ? std::string() : ": " + got.error().message));
  REQUIRE(got.has_value());
  require_close(std::vector<float>(got->begin(), got->end()), want_full, tol);
  require_close(std::vector<float>(gpu.row_logits().begin(), gpu.row_logits().end()), want_rows, tol);
}

}  // namespace inflight::test::gpu

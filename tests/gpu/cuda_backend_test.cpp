// End to end: stories260K on the cuda backend against the cpu backend. Both are fed the
// CPU's greedy tokens (teacher forcing) so every step compares the same inputs: the
// GPU's top-1 must be the CPU's, or tie with it within bf16 tolerance.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <random>

#include "backends/cpu_backend.hpp"
#include "backends/cuda_backend.hpp"
#include "core/engine/sampling/sampler.hpp"
#include "core/model/formats/llama2c.hpp"
#include "core/model/tokenizer/llama2c_tokenizer.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tests/shared_data.hpp"

using namespace inflight;

namespace {

constexpr int num_blocks = 256;
constexpr int blocks_per_seq = 16;  // 256 tokens each at block size 16

std::shared_ptr<const model_weights> load_stories() {
  const auto path = test::shared_file("models/stories260K/stories260K.bin");
  if (path.empty()) return nullptr;
  auto w = load_llama2c(path);
  REQUIRE(w.has_value());
  return std::make_shared<const model_weights>(std::move(*w));
}

sampling_params greedy() {
  sampling_params p;
  p.temperature = 0.0f;
  return p;
}

struct lockstep {
  std::unique_ptr<cpu_backend> cpu;
  std::unique_ptr<cuda_backend> gpu;
  int vocab = 0;
  int num_graph_steps = 0;

  /// Runs `plan` on both; checks every sampled row; returns the CPU's tokens.
  std::vector<token_id> step(const step_plan& plan) {
    auto want = cpu->forward(plan);
    REQUIRE(want.has_value());
    const std::vector<float> want_logits(want->begin(), want->end());
    auto got = gpu->execute(plan);
    INFO((got ? std::string() : got.error().message));
    REQUIRE(got.has_value());
    if (gpu->last_step_used_graph()) ++num_graph_steps;
    std::vector<token_id> tokens;
    for (std::size_t r = 0; r < got->tokens.size(); ++r) {
      const float* row = want_logits.data() + r * std::size_t(vocab);
      const auto best = int(std::max_element(row, row + vocab) - row);
      const auto gpu_token = got->tokens[r].token;
      INFO("row " << r << ": cpu " << best << " (" << row[best] << "), gpu " << gpu_token << " (" << row[gpu_token] << ")");
      REQUIRE(row[best] - row[gpu_token] <= 0.05f * (1.0f + std::fabs(row[best])));
      tokens.push_back(best);
    }
    return tokens;
  }
};

void run_lockstep(const std::shared_ptr<const model_weights>& w, bool use_graphs, int chunk) {
  lockstep ls;
  auto cpu = cpu_backend::create(w, kv_cache_config{16, num_blocks, 0});
  REQUIRE(cpu.has_value());
  cuda_backend_options o;
  o.num_kv_blocks = num_blocks;
  o.max_num_seqs = 8;
  o.use_graphs = use_graphs;
  auto gpu = cuda_backend::create(w, o);
  INFO((gpu ? std::string() : gpu.error().message));
  REQUIRE(gpu.has_value());
  ls.cpu = std::move(*cpu);
  ls.gpu = std::move(*gpu);
  ls.vocab = w->config.vocab_size;
  // Five sequences with prompts of different lengths, prefilled in chunks, then decoded.
  std::vector<std::vector<token_id>> seqs = {{1, 403, 407}, {1}, {1, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71,
                                                                  72, 73, 74, 75, 76, 77, 78},
                                             {1, 300, 12, 5}, {1, 200}};
  std::vector<int> computed(seqs.size(), 0);
  for (int step = 0; step < 120; ++step) {
    step_plan plan;
    plan.step_id = std::uint64_t(step);
    std::vector<std::size_t> index;
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      if (step < int(i)) continue;  // staggered arrivals: mixed prefill + decode steps
      const int n = std::min(chunk, int(seqs[i].size()) - computed[i]);
      if (n <= 0 || int(seqs[i].size()) >= blocks_per_seq * 16) continue;
      seq_step st;
      st.id = seq_id(i);
      st.tokens.assign(seqs[i].begin() + computed[i], seqs[i].begin() + computed[i] + n);
      st.start_position = computed[i];
      for (int b = 0; b < blocks_per_seq; ++b) st.block_table.push_back(block_id(int(i) * blocks_per_seq + b));
      st.do_sample = computed[i] + n == int(seqs[i].size());
      st.params = greedy();
      plan.seqs.push_back(std::move(st));
      index.push_back(i);
    }
    if (plan.seqs.empty()) break;
    const auto tokens = ls.step(plan);
    std::size_t k = 0;
    for (std::size_t j = 0; j < plan.seqs.size(); ++j) {
      auto& s = seqs[index[j]];
      computed[index[j]] += int(plan.seqs[j].tokens.size());
      if (plan.seqs[j].do_sample) s.push_back(tokens.at(k++));
    }
  }
  if (use_graphs) REQUIRE(ls.num_graph_steps > 50);
  if (!use_graphs) REQUIRE(ls.num_graph_steps == 0);
}

}  // namespace

TEST_CASE("cuda backend agrees with the cpu backend on stories260K (graphs)", "[gpu]") {
  test::gpu::require_device();
  const auto w = load_stories();
  if (!w) return;
  run_lockstep(w, true, 4);
}

TEST_CASE("cuda backend agrees with the cpu backend on stories260K (no graphs, long chunks)", "[gpu]") {
  test::gpu::require_device();
  const auto w = load_stories();
  if (!w) return;
  run_lockstep(w, false, 64);
}

TEST_CASE("cuda backend: sampled rows go through core's sampler", "[gpu]") {
  test::gpu::require_device();
  const auto w = load_stories();
  if (!w) return;
  cuda_backend_options o;
  o.num_kv_blocks = 32;
  auto gpu = cuda_backend::create(w, o);
  REQUIRE(gpu.has_value());
  step_plan plan;
  seq_step st;
  st.tokens = {1, 403, 407, 300};
  st.block_table = {0, 1};
  st.do_sample = true;
  st.params.temperature = 0.8f;
  st.params.top_k = 20;
  st.params.repetition_penalty = 1.3f;
  st.params.logprobs = 3;
  st.seed = 42;
  st.history = st.tokens;
  st.num_prompt_tokens = 4;
  plan.seqs.push_back(st);
  auto logits = (*gpu)->forward(plan);
  REQUIRE(logits.has_value());
  const std::vector<float> row(logits->begin(), logits->end());
  const auto want = sample(row, st.params, st.history, st.num_prompt_tokens, st.seed, st.sample_index);
  // The same step again over the same cache slots: same logits, same seeded draw.
  auto got = (*gpu)->execute(plan);
  REQUIRE(got.has_value());
  REQUIRE(got->tokens.size() == 1);
  REQUIRE(got->tokens[0].token == want.token);
  REQUIRE(got->tokens[0].top_logprobs.size() == 3);
  REQUIRE(got->tokens[0].logprob <= 0.0f);
}

TEST_CASE("cuda backend: greedy rows with a logit_bias or a grammar mask go through core's pipeline", "[gpu]") {
  test::gpu::require_device();
  const auto w = load_stories();
  if (!w) return;
  cuda_backend_options o;
  o.num_kv_blocks = 32;
  o.device_grammar_mask = false;  // the host path: the mask applied by core's pipeline
  auto gpu = cuda_backend::create(w, o);
  REQUIRE(gpu.has_value());
  step_plan plan;
  seq_step st;
  st.tokens = {1, 403, 407, 300};
  st.block_table = {0, 1};
  st.do_sample = true;
  st.params = greedy();
  plan.seqs.push_back(st);
  auto logits = (*gpu)->forward(plan);
  REQUIRE(logits.has_value());
  const std::vector<float> row(logits->begin(), logits->end());
  const auto best = token_id(std::max_element(row.begin(), row.end()) - row.begin());
  // The arg-max is biased away; then only two other tokens are allowed by a mask.
  plan.seqs[0].params.logit_bias = {{best, -100.0f}};
  const token_id a = best == 5 ? 6 : 5, b = best == 9 ? 10 : 9;
  auto& mask = plan.seqs[0].allowed_tokens;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      mask.assign((row.size() + 63) / 64, 0);
      for (token_id id : {a, b}) mask[std::size_t(id) >> 6] |= std::uint64_t{1} << (id & 63);
      plan.seqs[0].params.logit_bias.clear();
    }
    REQUIRE(!is_raw_greedy(plan.seqs[0]));
    const auto want = sample(row, plan.seqs[0]);
    auto got = (*gpu)->execute(plan);
    REQUIRE(got.has_value());
    REQUIRE(got->tokens.size() == 1);
    CHECK(got->tokens[0].token == want.token);
    CHECK(got->tokens[0].token != best);
    if (pass == 1) CHECK((got->tokens[0].token == a || got->tokens[0].token == b));
  }
}

TEST_CASE("cuda backend: greedy rows under a grammar mask sampled on the device match core's sampler", "[gpu]") {
  test::gpu::require_device();
  const auto w = load_stories();
  if (!w) return;
  cuda_backend_options o;
  o.num_kv_blocks = 32;
  o.device_grammar_mask = true;
  auto gpu = cuda_backend::create(w, o);
  REQUIRE(gpu.has_value());
  // Three sampled rows in one step: a raw-greedy one and two under masks (one of them
  // shorter than the vocabulary, one allowing nothing).
  step_plan plan;
  for (int i = 0; i < 4; ++i) {
    seq_step st;
    st.id = seq_id(i + 1);
    st.tokens = {1, 403 + i, 407, 300};
    st.block_table = {i * 2, i * 2 + 1};
    st.do_sample = i != 3;  // the fourth is a prompt chunk: no row
    st.params = greedy();
    plan.seqs.push_back(st);
  }
  auto logits = (*gpu)->forward(plan);
  REQUIRE(logits.has_value());
  const std::size_t vocab = logits->size() / 3;
  std::mt19937 rng(5);
  auto& masked = plan.seqs[1].allowed_tokens;
  masked.assign((vocab + 63) / 64, 0);
  for (int k = 0; k < 40; ++k) {
    const auto id = std::size_t(rng() % vocab);
    masked[id >> 6] |= std::uint64_t{1} << (id & 63);
  }
  plan.seqs[2].allowed_tokens.assign(1, 0);  // allows nothing (and is shorter than the vocabulary)
  REQUIRE(is_raw_greedy(plan.seqs[0]));
  REQUIRE(is_masked_greedy(plan.seqs[1]));
  REQUIRE(is_masked_greedy(plan.seqs[2]));
  auto got = (*gpu)->execute(plan);
  REQUIRE(got.has_value());
  REQUIRE(got->tokens.size() == 3);
  for (std::size_t r = 0; r < 3; ++r) {
    INFO("row " << r);
    const std::vector<float> row(logits->begin() + std::ptrdiff_t(r * vocab), logits->begin() + std::ptrdiff_t((r + 1) * vocab));
    const auto want = sample(row, plan.seqs[r]);
    CHECK(got->tokens[r].token == want.token);
    CHECK(got->tokens[r].logprob == Approx(want.logprob).margin(1e-4));
  }
  CHECK(got->tokens[2].token == 0);
}

TEST_CASE("cuda backend rejects plans outside its cache", "[gpu]") {
  test::gpu::require_device();
  const auto w = load_stories();
  if (!w) return;
  cuda_backend_options o;
  o.num_kv_blocks = 4;
  auto gpu = cuda_backend::create(w, o);
  REQUIRE(gpu.has_value());
  REQUIRE((*gpu)->num_kv_blocks() == 4);
  step_plan plan;
  seq_step st;
  st.tokens = {1};
  st.block_table = {4};  // one past the last block
  plan.seqs.push_back(st);
  auto r = (*gpu)->execute(plan);
  REQUIRE_FALSE(r.has_value());
  REQUIRE(r.error().code == errc::invalid_argument);
  plan.seqs[0].block_table = {3};
  plan.seqs[0].tokens = {100000};
  REQUIRE_FALSE((*gpu)->execute(plan).has_value());
}

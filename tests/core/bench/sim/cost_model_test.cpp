#include <catch2/catch.hpp>

#include "core/bench/gpu_specs.hpp"
#include "core/bench/policy_budget.hpp"
#include "core/bench/sim/cost_model.hpp"
#include "core/model/formats/shapes.hpp"

using namespace inflight;

namespace {

model_config llama_8b() {
  auto shape = named_shape("llama-3.1-8b");
  REQUIRE(shape.has_value());
  return *shape;
}

bench::hardware_spec h100() {
  auto hw = bench::named_gpu("h100");
  REQUIRE(hw.has_value());
  return *hw;
}

}  // namespace

TEST_CASE("roofline: a decode step is bound by reading the weights and the KV cache", "[core][sim]") {
  const auto m = llama_8b();
  auto cost = sim::roofline_cost_model::try_create(m, h100(), {});
  REQUIRE(cost.has_value());
  const double weights = double(m.num_parameters()) * 2.0;
  const double kv_per_token = 2.0 * 32 * 8 * 128 * 2;  // K and V x layers x KV heads x head_dim x bf16
  CHECK(cost->weight_bytes() == weights);
  CHECK(cost->kv_bytes_per_token() == kv_per_token);
  step_shape decode;
  for (int i = 0; i < 8; ++i) decode.seqs.push_back({1, 1000});
  const auto c = cost->cost_of(decode);
  CHECK(c.bytes == weights + 8 * 1000 * kv_per_token);
  CHECK(c.memory_s == Approx(c.bytes / (3.35e12 * 0.75)));
  CHECK(c.compute_s < c.memory_s);
  CHECK(c.seconds == Approx(c.memory_s + 0.001));
  // About 8 ms: the datasheet floor of `inflight plan` (16 GB / 3.35 TB/s) over 0.75, plus 1 ms.
  CHECK(c.seconds > 0.007);
  CHECK(c.seconds < 0.009);
}

TEST_CASE("roofline: a long prefill is bound by compute, attention included", "[core][sim]") {
  const auto m = llama_8b();
  sim::roofline_options o;
  o.compute_efficiency = 0.5;
  o.step_overhead_s = 0.0;
  auto cost = sim::roofline_cost_model::try_create(m, h100(), o);
  REQUIRE(cost.has_value());
  step_shape prefill;
  prefill.seqs.push_back({4096, 4096});
  const auto c = cost->cost_of(prefill);
  const double linear = 2.0 * double(m.num_parameters()) * 4096;
  const double attention = 4.0 * 32 * 32 * 128 * (4096.0 * 4097.0 / 2.0);
  CHECK(c.flops == Approx(linear + attention));
  CHECK(c.compute_s > c.memory_s);
  CHECK(c.seconds == Approx((linear + attention) / (989e12 * 0.5)));
  // A chunk after 4096 cached tokens attends to all of them too.
  step_shape chunk;
  chunk.seqs.push_back({512, 4096 + 512});
  CHECK(cost->cost_of(chunk).flops ==
        Approx(2.0 * double(m.num_parameters()) * 512 + 4.0 * 32 * 32 * 128 * (512.0 * 4096 + 512.0 * 513 / 2)));
}

TEST_CASE("roofline: bad figures are refused", "[core][sim]") {
  sim::roofline_options o;
  o.bandwidth_efficiency = 1.5;
  CHECK(!sim::roofline_cost_model::try_create(llama_8b(), h100(), o).has_value());
  o = {};
  o.compute_efficiency = 0.0;
  CHECK(!sim::roofline_cost_model::try_create(llama_8b(), h100(), o).has_value());
  o = {};
  o.step_overhead_s = -1.0;
  CHECK(!sim::roofline_cost_model::try_create(llama_8b(), h100(), o).has_value());
  CHECK(!sim::roofline_cost_model::try_create(model_config{}, h100(), {}).has_value());
  auto hw = h100();
  hw.bandwidth_bytes_per_s = 0.0;
  CHECK(!sim::roofline_cost_model::try_create(llama_8b(), hw, {}).has_value());
}

TEST_CASE("gpu specs: named GPUs carry their datasheet figures", "[core][sim]") {
  const auto hw = h100();
  CHECK(hw.bandwidth_bytes_per_s == 3.35e12);
  CHECK(hw.flops_per_s == 989e12);
  CHECK(hw.memory_bytes == 80.0 * 1024 * 1024 * 1024);
  auto a100 = bench::named_gpu("a100");
  REQUIRE(a100.has_value());
  CHECK(a100->flops_per_s == 312e12);
  CHECK(!bench::named_gpu("h1000").has_value());
  for (const auto& name : bench::gpu_names()) CHECK(bench::named_gpu(name).has_value());
}

TEST_CASE("policy budget: whole-prompt policies get room for a full batch", "[core][sim]") {
  std::vector<bench::bench_prompt> prompts(10);
  for (int i = 0; i < 10; ++i) prompts[std::size_t(i)].input_len = 50 + i * 10;  // longest 140
  CHECK(bench::offline_budget("fcfs", 512, 64, prompts) == 512);
  CHECK(bench::offline_budget("static", 512, 64, prompts) == 10 * 140);
  CHECK(bench::offline_budget("tgi", 512, 4, prompts) == 4 * 140);
  CHECK(bench::offline_budget("static", 4096, 4, prompts) == 4096);
  prompts[0].tag = prompts[1].tag = "decode";
  CHECK(bench::interference_budget(prompts) == 142);
}

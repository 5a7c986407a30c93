#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "core/bench/arrival.hpp"
#include "core/bench/policy_budget.hpp"
#include "core/bench/sim/simulator.hpp"
#include "core/model/formats/shapes.hpp"
#include "tests/core/bench/sim/sim_helpers.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

std::vector<bench::bench_prompt> workload(const std::string& name, int num_prompts, std::uint64_t seed, double rate) {
  std::mt19937_64 rng(seed);
  bench::workload_options w;
  w.name = name;
  w.num_prompts = num_prompts;
  w.vocab_size = 1000;
  auto prompts = bench::workload_dataset(w, rng);
  REQUIRE(prompts.has_value());
  auto times = bench::arrival_times(int(prompts->size()), {rate, 1.0}, rng);
  REQUIRE(times.has_value());
  for (std::size_t i = 0; i < prompts->size(); ++i) (*prompts)[i].arrival_s = (*times)[i];
  return std::move(*prompts);
}

sim::roofline_cost_model llama_8b_on_h100() {
  auto shape = named_shape("llama-3.1-8b");
  REQUIRE(shape.has_value());
  auto cost = sim::roofline_cost_model::try_create(*shape, bench::hardware_spec{}, {});
  REQUIRE(cost.has_value());
  return std::move(*cost);
}

/// A cost model that breaks its contract.
struct nan_cost_model final : sim::step_cost_model {
  double step_seconds(const step_shape&) const override { return std::nan(""); }
  std::string describe() const override { return "nan"; }
};

}  // namespace

TEST_CASE("simulate: one request alone takes one prefill step to its first token and one step per further token",
          "[core][sim]") {
  const sim::constant_cost_model cost(0.25);
  SECTION("the prompt fits one step") {
    const auto r = run_sim({sim_prompt(10, 5)}, "fcfs", sim_config(512, 4, 64), cost);
    REQUIRE(r.records.size() == 1);
    const auto& rec = r.records[0];
    REQUIRE(rec.is_success);
    CHECK(rec.ttft_s == 0.25);
    CHECK(rec.e2el_s == 0.25 * 5);
    CHECK(rec.tpot_s() == 0.25);
    CHECK(rec.itl_s == std::vector<double>(4, 0.25));
    CHECK(rec.output_tokens == 5);
    CHECK(rec.prompt_tokens == 10);
    CHECK(r.num_steps == 5);
    CHECK(r.duration_s == 0.25 * 5);
    CHECK(r.summary.output_throughput == 5 / (0.25 * 5));
  }
  SECTION("a chunked prompt: its first token comes with its last chunk") {
    const auto r = run_sim({sim_prompt(10, 5)}, "splitfuse", sim_config(4, 4, 64, 4), cost);
    const auto& rec = r.records[0];
    CHECK(rec.ttft_s == 0.25 * 3);
    CHECK(rec.e2el_s == 0.25 * 3 + 0.25 * 4);
  }
  SECTION("arriving late: the clock jumps to its arrival") {
    const auto r = run_sim({sim_prompt(10, 5, 2.0)}, "fcfs", sim_config(512, 4, 64), cost);
    CHECK(r.first_scheduled_s[0] == 2.0);
    CHECK(r.records[0].start_s == 2.0);
    CHECK(r.records[0].ttft_s == 0.25);
    CHECK(r.duration_s == 2.0 + 0.25 * 5);
  }
}

TEST_CASE("simulate: the same seed gives the same figures", "[core][sim]") {
  const auto cost = llama_8b_on_h100();
  const auto prompts = workload("latency", 60, 11, 40.0);
  const auto a = run_sim(prompts, "splitfuse", sim_config(256, 16, 400), cost);
  const auto b = run_sim(workload("latency", 60, 11, 40.0), "splitfuse", sim_config(256, 16, 400), cost);
  REQUIRE(a.records.size() == b.records.size());
  for (std::size_t i = 0; i < a.records.size(); ++i) {
    INFO("request " << i);
    CHECK(a.records[i].start_s == b.records[i].start_s);
    CHECK(a.records[i].ttft_s == b.records[i].ttft_s);
    CHECK(a.records[i].e2el_s == b.records[i].e2el_s);
    CHECK(a.records[i].itl_s == b.records[i].itl_s);
  }
  CHECK(a.num_steps == b.num_steps);
  CHECK(a.duration_s == b.duration_s);
  // Another seed is another workload: the figures differ.
  const auto c = run_sim(workload("latency", 60, 12, 40.0), "splitfuse", sim_config(256, 16, 400), cost);
  CHECK(c.duration_s != a.duration_s);
}

TEST_CASE("simulate: every shipped policy completes a workload and gives every KV block back", "[core][sim]") {
  const auto cost = llama_8b_on_h100();
  // Groups of 8 prompts of 272 tokens sharing 256: a pool of 80 blocks of 16 holds about
  // four at once, so sequences wait, share cached blocks and are preempted.
  const auto prompts = workload("prefix", 48, 3, 200.0);
  std::uint64_t num_preemptions = 0;
  for (const auto& name : shipped_policies()) {
    INFO("policy " << name);
    auto c = sim_config(bench::offline_budget(name, 512, 8, prompts), 8, 80);
    const auto r = run_sim(prompts, name, c, cost);
    CHECK(r.summary.num_completed == int(prompts.size()));
    for (std::size_t i = 0; i < prompts.size(); ++i) CHECK(r.records[i].output_tokens == prompts[i].output_len);
    CHECK(r.num_free_blocks_at_end == 80);
    CHECK(r.num_kv_sequences_at_end == 0);
    if (name == "fcfs") CHECK(r.summary.prefix_cache_hit_rate() > 0.5);
    num_preemptions += r.counters.num_preemptions;
  }
  CHECK(num_preemptions > 0);  // the pool is small enough that blocks were taken back
}

TEST_CASE("simulate: goodput counts only the requests within every SLO", "[core][sim]") {
  // One sequence at a time, two tokens each: TTFT 1, 3 and 5 steps; E2E 2, 4 and 6.
  const sim::constant_cost_model cost(0.25);
  const std::vector<bench::bench_prompt> prompts = {sim_prompt(10, 2), sim_prompt(10, 2, 0.0, 50), sim_prompt(10, 2, 0.0, 90)};
  auto c = sim_config(512, 1, 64);
  SECTION("no SLO: no goodput") { CHECK(!run_sim(prompts, "fcfs", c, cost).summary.goodput.has_value()); }
  SECTION("TTFT alone") {
    c.objectives.ttft_s = 0.875;
    const auto r = run_sim(prompts, "fcfs", c, cost);
    CHECK(r.records[2].ttft_s == 1.25);
    REQUIRE(r.summary.goodput.has_value());
    CHECK(*r.summary.goodput == Approx(2 / 1.5));
  }
  SECTION("TTFT and E2E: both must hold") {
    c.objectives.ttft_s = 0.875;
    c.objectives.e2el_s = 0.75;
    CHECK(*run_sim(prompts, "fcfs", c, cost).summary.goodput == Approx(1 / 1.5));
  }
  SECTION("a TPOT nobody meets") {
    c.objectives.tpot_s = 0.125;
    CHECK(*run_sim(prompts, "fcfs", c, cost).summary.goodput == 0.0);
  }
}

TEST_CASE("simulate: no request is scheduled before it arrives", "[core][sim]") {
  const sim::constant_cost_model cost(0.002);
  const auto prompts = workload("latency", 80, 5, 5.0);
  const auto r = run_sim(prompts, "fcfs", sim_config(512, 8, 200), cost);
  int num_late = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    INFO("request " << i << " arrives at " << prompts[i].arrival_s);
    REQUIRE(r.records[i].is_success);
    CHECK(r.records[i].start_s == prompts[i].arrival_s);
    CHECK(r.first_scheduled_s[i] >= prompts[i].arrival_s);
    CHECK(r.records[i].ttft_s >= Approx(0.002));  // one step after its arrival (rounding aside)
    if (r.first_scheduled_s[i] > 1.0) ++num_late;
  }
  CHECK(num_late > 0);  // the clock followed the arrivals (80 at 5/s span many seconds)
  CHECK(r.duration_s > prompts.back().arrival_s);
}

TEST_CASE("simulate: a request the engine refuses is a failed record, the rest run", "[core][sim]") {
  const sim::constant_cost_model cost(0.01);
  // 4 blocks of 16 tokens: a 100-token prompt cannot fit.
  const auto r = run_sim({sim_prompt(10, 3), sim_prompt(100, 3), sim_prompt(12, 3)}, "fcfs", sim_config(512, 4, 4), cost);
  CHECK(r.records[0].is_success);
  CHECK(!r.records[1].is_success);
  CHECK(r.records[1].error.find("context") != std::string::npos);
  CHECK(r.records[2].is_success);
  CHECK(r.summary.num_failed == 1);
  CHECK(r.num_free_blocks_at_end == 4);
}

TEST_CASE("simulate: bad input is an error", "[core][sim]") {
  const sim::constant_cost_model cost(0.01);
  CHECK(!sim::simulate({}, load_policy("fcfs"), sim_config(512, 4, 64), cost).has_value());
  CHECK(!sim::simulate({sim_prompt(10, 3)}, load_policy("fcfs"), sim_config(512, 4, 0), cost).has_value());
  const nan_cost_model nan_cost;
  auto r = sim::simulate({sim_prompt(10, 3)}, load_policy("fcfs"), sim_config(512, 4, 64), nan_cost);
  REQUIRE(!r.has_value());
  CHECK(r.error().message.find("cost model") != std::string::npos);
}

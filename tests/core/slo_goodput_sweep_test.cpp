// Not a test: the goodput sweep of docs/simulate.md ("Goodput policy"), hidden from
// ctest ([.]). It sets up what `inflight simulate --shape llama-3.1-8b --gpu h100
// --workload <w> --size full --sweep request-rate=... --slo-ttft T --slo-tpot P` sets up
// (same dataset and arrival draws, roofline defaults, KV pool from the H100's memory at
// 0.9 utilization, the default deployment's limits and bench offline's per-policy
// budget) and prints one row per policy and rate. Run it with
//   build/bin/inflight_core_tests "[goodput_sweep]" -s   (env: SWEEP_WORKLOAD, SWEEP_RATES,
//                                                          SWEEP_TTFT_MS, SWEEP_TPOT_MS)
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>

#include "core/bench/arrival.hpp"
#include "core/bench/gpu_specs.hpp"
#include "core/bench/policy_budget.hpp"
#include "core/model/shapes.hpp"
#include "core/sim/simulator.hpp"
#include "tests/core/sched_harness.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

std::vector<double> parse_list(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::stod(item));
  return out;
}

std::vector<bench::bench_prompt> prompts_at(const std::string& workload, double rate, int vocab_size) {
  std::mt19937_64 rng(0);
  auto prompts = bench::workload_dataset({workload, bench::workload_size::full, 0, 0, vocab_size}, rng);
  REQUIRE(prompts.has_value());
  auto times = bench::arrival_times(int(prompts->size()), {rate, 1.0}, rng);
  REQUIRE(times.has_value());
  for (std::size_t i = 0; i < prompts->size(); ++i) (*prompts)[i].arrival_s = (*times)[i];
  return std::move(*prompts);
}

double pct(const bench::metric_stats& m, double p) {
  for (const auto& [q, v] : m.percentiles)
    if (q == p) return v;
  return 0.0;
}

}  // namespace

TEST_CASE("slo: goodput sweep against every shipped policy", "[.][goodput_sweep]") {
  const std::string workload = env_or("SWEEP_WORKLOAD", "variance");
  const auto rates = parse_list(env_or("SWEEP_RATES", "10,20,25,30,35,40,50"));
  const double ttft_ms = std::stod(env_or("SWEEP_TTFT_MS", "500"));
  const double tpot_ms = std::stod(env_or("SWEEP_TPOT_MS", "50"));
  auto shape = named_shape("llama-3.1-8b");
  REQUIRE(shape.has_value());
  auto hw = bench::named_gpu("h100");
  REQUIRE(hw.has_value());
  hw->memory_utilization = 0.9;
  auto cost = sim::roofline_cost_model::try_create(*shape, *hw, {});
  REQUIRE(cost.has_value());
  const int block_size = 16;
  const double kv_tokens = std::floor((hw->memory_bytes * 0.9 - cost->weight_bytes()) / cost->kv_bytes_per_token());
  const int num_kv_blocks = int(kv_tokens / block_size);
  std::vector<std::pair<std::string, policy_settings>> policies;
  for (const auto& name : shipped_policies()) policies.push_back({name, {}});
  policies.push_back({"slo", {{"late", "shed"}}});
  std::printf("workload %s (full), llama-3.1-8b on h100, %s, KV blocks %d x %d, SLO TTFT %g ms TPOT %g ms\n",
              workload.c_str(), cost->describe().c_str(), num_kv_blocks, block_size, ttft_ms, tpot_ms);
  std::printf("%-10s %5s %6s %5s %5s %7s %9s %7s %22s %22s\n", "policy", "rate", "budget", "done", "shed", "req/s",
              "out tok/s", "good/s", "TTFT p50/p99", "TPOT p50/p99");
  for (double rate : rates) {
    const auto prompts = prompts_at(workload, rate, shape->vocab_size);
    for (const auto& [name, settings] : policies) {
      sim::sim_config c;
      c.scheduler.max_num_seqs = 64;
      c.scheduler.max_num_batched_tokens = bench::offline_budget(name, 512, 64, prompts);
      c.scheduler.max_seq_len = shape->max_seq_len;
      c.num_kv_blocks = num_kv_blocks;
      c.block_size = block_size;
      c.percentiles = {50, 90, 99};
      c.objectives.ttft_s = ttft_ms / 1e3;
      c.objectives.tpot_s = tpot_ms / 1e3;
      c.targets = {ttft_ms, tpot_ms};
      auto r = sim::simulate(prompts, load_policy(name, settings), c, *cost);
      INFO((r ? std::string() : r.error().message));
      REQUIRE(r.has_value());
      const auto& s = r->summary;
      const std::string label = settings.empty() ? name : name + "+shed";
      std::printf("%-10s %5g %6d %5d %5llu %7.2f %9.1f %7.2f %11.1f/%-10.1f %11.1f/%-10.1f\n", label.c_str(), rate,
                  c.scheduler.max_num_batched_tokens, s.num_completed, (unsigned long long)r->counters.num_shed,
                  s.request_throughput, s.output_throughput, s.goodput.value_or(0.0), pct(s.ttft_ms, 50),
                  pct(s.ttft_ms, 99), pct(s.tpot_ms, 50), pct(s.tpot_ms, 99));
      std::fflush(stdout);
    }
  }
}

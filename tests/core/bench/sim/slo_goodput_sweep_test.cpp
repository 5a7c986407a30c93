// The goodput of the slo policy on a modelled H100 (docs/simulate.md, "Goodput policy"):
// one test of its target, and a sweep hidden from ctest ([.]) that sets up what `inflight simulate --shape llama-3.1-8b --gpu h100
// --workload <w> --size full --sweep request-rate=... --slo-ttft T --slo-tpot P` sets up
// (same dataset and arrival draws, roofline defaults, KV pool from the H100's memory at
// 0.9 utilization, the default deployment's limits and bench offline's per-policy
// budget) and prints one row per policy and rate. Run it with
//   build/bin/inflight_core_tests "[goodput_sweep]" -s   (env: SWEEP_WORKLOAD, SWEEP_RATES,
//                                                          SWEEP_TTFT_MS, SWEEP_TPOT_MS,
//                                                          SWEEP_BURSTINESS)
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>

#include "core/bench/arrival.hpp"
#include "core/bench/gpu_specs.hpp"
#include "core/bench/policy_budget.hpp"
#include "core/bench/sim/simulator.hpp"
#include "core/model/formats/shapes.hpp"
#include "tests/core/engine/sched/sched_harness.hpp"

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

std::vector<bench::bench_prompt> prompts_at(const std::string& workload, double rate, int vocab_size,
                                            double burstiness = 1.0) {
  std::mt19937_64 rng(0);
  auto prompts = bench::workload_dataset({workload, bench::workload_size::full, 0, 0, vocab_size}, rng);
  REQUIRE(prompts.has_value());
  auto times = bench::arrival_times(int(prompts->size()), {rate, burstiness}, rng);
  REQUIRE(times.has_value());
  for (std::size_t i = 0; i < prompts->size(); ++i) (*prompts)[i].arrival_s = (*times)[i];
  return std::move(*prompts);
}

double pct(const bench::metric_stats& m, double p) {
  for (const auto& [q, v] : m.percentiles)
    if (q == p) return v;
  return 0.0;
}

/// Llama-3.1-8B on the H100 roofline, the KV pool from its memory at 0.9 utilization.
struct h100_8b {
  model_config shape;
  sim::roofline_cost_model cost;
  int num_kv_blocks = 0;
};

h100_8b make_h100_8b() {
  auto shape = named_shape("llama-3.1-8b");
  REQUIRE(shape.has_value());
  auto hw = bench::named_gpu("h100");
  REQUIRE(hw.has_value());
  hw->memory_utilization = 0.9;
  auto cost = sim::roofline_cost_model::try_create(*shape, *hw, {});
  REQUIRE(cost.has_value());
  const double kv_tokens = std::floor((hw->memory_bytes * 0.9 - cost->weight_bytes()) / cost->kv_bytes_per_token());
  return {*shape, std::move(*cost), int(kv_tokens / 16)};
}

/// The default deployment's limits, bench offline's budget, the SLO as every request's targets.
sim::sim_config sweep_config(const std::string& policy_name, const std::vector<bench::bench_prompt>& prompts,
                             const h100_8b& setup, double ttft_ms, double tpot_ms) {
  sim::sim_config c;
  c.scheduler.max_num_seqs = 64;
  c.scheduler.max_num_batched_tokens = bench::offline_budget(policy_name, 512, 64, prompts);
  c.scheduler.max_seq_len = setup.shape.max_seq_len;
  c.num_kv_blocks = setup.num_kv_blocks;
  c.block_size = 16;
  c.percentiles = {50, 90, 99};
  c.objectives.ttft_s = ttft_ms / 1e3;
  c.objectives.tpot_s = tpot_ms / 1e3;
  c.targets = {ttft_ms, tpot_ms};
  return c;
}

}  // namespace

TEST_CASE("slo: with a tight TPOT and bursty arrivals, 1.3x fcfs's goodput at fcfs's peak, every request served",
          "[core][sched][slo][sim]") {
  // TPOT 9.5 ms is 1.3x the roofline's one-sequence step (about 7.4 ms); TTFT 1 s.
  // Gamma arrivals of shape 0.25 (gaps with a coefficient of variation of 2).
  const double ttft_ms = 1000, tpot_ms = 9.5;
  const auto setup = make_h100_8b();
  struct point {
    double rate, fcfs_good, fcfs_rps, slo_good, slo_rps;
    int slo_done;
  };
  std::vector<point> points;
  for (double rate : {10.0, 12.5, 15.0}) {
    const auto prompts = prompts_at("variance", rate, setup.shape.vocab_size, 0.25);
    point p{rate, 0, 0, 0, 0, 0};
    for (const std::string name : {"fcfs", "slo"}) {
      auto r = sim::simulate(prompts, load_policy(name), sweep_config(name, prompts, setup, ttft_ms, tpot_ms), setup.cost);
      REQUIRE(r.has_value());
      const auto& s = r->summary;
      (name == "fcfs" ? p.fcfs_good : p.slo_good) = s.goodput.value_or(0.0);
      (name == "fcfs" ? p.fcfs_rps : p.slo_rps) = s.request_throughput;
      if (name == "slo") p.slo_done = s.num_completed;
    }
    INFO("rate " << rate << ": fcfs " << p.fcfs_good << " good/s of " << p.fcfs_rps << " req/s, slo " << p.slo_good
                 << " of " << p.slo_rps);
    points.push_back(p);
  }
  // fcfs's goodput rises, then falls (the SLO binds before the throughput does).
  const auto peak = std::max_element(points.begin(), points.end(),
                                     [](const point& a, const point& b) { return a.fcfs_good < b.fcfs_good; });
  INFO("fcfs peaks at " << peak->rate << " req/s: " << peak->fcfs_good << " good/s; slo there: " << peak->slo_good);
  CHECK(peak != points.begin());
  CHECK(peak != points.end() - 1);
  CHECK(peak->slo_good >= 1.3 * peak->fcfs_good);
  for (const auto& p : points) {
    CHECK(p.slo_done == 1000);                 // deprioritized, never dropped
    CHECK(p.slo_rps >= 0.95 * p.fcfs_rps);     // no throughput given up for it
  }
}

TEST_CASE("slo: goodput sweep against every shipped policy", "[.][goodput_sweep]") {
  const std::string workload = env_or("SWEEP_WORKLOAD", "variance");
  const auto rates = parse_list(env_or("SWEEP_RATES", "10,20,25,30,35,40,50"));
  const double ttft_ms = std::stod(env_or("SWEEP_TTFT_MS", "500"));
  const double tpot_ms = std::stod(env_or("SWEEP_TPOT_MS", "50"));
  const double burstiness = std::stod(env_or("SWEEP_BURSTINESS", "1"));
  const auto setup = make_h100_8b();
  const auto* cost = &setup.cost;
  std::vector<std::pair<std::string, policy_settings>> policies;
  for (const auto& name : shipped_policies()) policies.push_back({name, {}});
  policies.push_back({"slo", {{"late", "shed"}}});
  std::printf("workload %s (full, burstiness %g), llama-3.1-8b on h100, %s, KV blocks %d x 16, SLO TTFT %g ms TPOT %g ms\n",
              workload.c_str(), burstiness, cost->describe().c_str(), setup.num_kv_blocks, ttft_ms, tpot_ms);
  std::printf("%-10s %5s %6s %5s %5s %7s %9s %7s %22s %22s\n", "policy", "rate", "budget", "done", "shed", "req/s",
              "out tok/s", "good/s", "TTFT p50/p99", "TPOT p50/p99");
  for (double rate : rates) {
    const auto prompts = prompts_at(workload, rate, setup.shape.vocab_size, burstiness);
    for (const auto& [name, settings] : policies) {
      const auto c = sweep_config(name, prompts, setup, ttft_ms, tpot_ms);
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

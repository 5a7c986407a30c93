// The replay cost model: one run's recorded steps given back in order. A simulation
// that records its own steps (with irregular times) and runs again on the recording
// must give the same figures: the replay is exact where the schedule is the same.
#include <catch2/catch.hpp>

#include <random>

#include "core/bench/arrival.hpp"
#include "core/bench/sim/profile_cost_model.hpp"
#include "core/bench/sim/simulator.hpp"
#include "tests/core/engine/sched/sched_harness.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

/// Steps of irregular length (a drawn time around a linear cost), each recorded as an
/// engine step: what `bench offline --record-steps` writes.
struct recording_cost_model final : sim::step_cost_model {
  mutable std::mt19937_64 rng{7};
  mutable std::vector<sim::profile_sample> steps;
  double step_seconds(const step_shape& shape) const override {
    std::uniform_real_distribution<double> jitter(0.5, 1.5);
    const double s = (1e-3 + 2e-5 * shape.num_tokens() + 1e-4 * shape.num_seqs()) * jitter(rng);
    sim::profile_sample sample;
    sample.prefill_seqs = 0;
    sample.seqs = shape.seqs;
    sample.seconds = s;
    steps.push_back(sample);
    return s;
  }
  std::string describe() const override { return "recording"; }
};

sim::step_profile recording_of(std::vector<sim::profile_sample> steps) {
  sim::step_profile p;
  p.origin.source = "engine";
  p.origin.model = "bench-20M";
  p.samples = std::move(steps);
  auto fit = sim::fit_profile(p.samples, {64, 256}, /*pin_undetermined=*/true);
  REQUIRE(fit.has_value());
  p.fit = *fit;
  return p;
}

std::vector<bench::bench_prompt> workload(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  bench::workload_options w;
  w.name = "latency";
  w.num_prompts = 60;
  w.vocab_size = 1000;
  auto prompts = bench::workload_dataset(w, rng);
  REQUIRE(prompts.has_value());
  auto times = bench::arrival_times(int(prompts->size()), {30.0, 1.0}, rng);
  REQUIRE(times.has_value());
  for (std::size_t i = 0; i < prompts->size(); ++i) (*prompts)[i].arrival_s = (*times)[i];
  return std::move(*prompts);
}

sim::sim_config config() {
  sim::sim_config c;
  c.scheduler.max_num_batched_tokens = 256;
  c.scheduler.max_num_seqs = 16;
  c.num_kv_blocks = 400;
  c.block_size = 16;
  return c;
}

}  // namespace

TEST_CASE("replay: a run on its own recorded steps gives its figures again", "[core][sim]") {
  const auto prompts = workload(3);
  for (const char* policy : {"fcfs", "splitfuse", "orca"}) {
    INFO("policy " << policy);
    recording_cost_model recorder;
    auto first = sim::simulate(prompts, load_policy(policy), config(), recorder);
    REQUIRE(first.has_value());
    auto replay = sim::replay_cost_model::try_create(recording_of(recorder.steps));
    REQUIRE(replay.has_value());
    auto again = sim::simulate(prompts, load_policy(policy), config(), *replay);
    REQUIRE(again.has_value());
    CHECK(replay->num_replayed() == recorder.steps.size());
    CHECK(replay->num_differing() == 0);
    REQUIRE(again->records.size() == first->records.size());
    for (std::size_t i = 0; i < first->records.size(); ++i) {
      INFO("request " << i);
      CHECK(again->records[i].ttft_s == first->records[i].ttft_s);
      CHECK(again->records[i].e2el_s == first->records[i].e2el_s);
      CHECK(again->records[i].itl_s == first->records[i].itl_s);
    }
    CHECK(again->duration_s == first->duration_s);
    // Another run's recording: the steps part, and are counted.
    recording_cost_model other;
    REQUIRE(sim::simulate(workload(4), load_policy(policy), config(), other).has_value());
    auto mismatched = sim::replay_cost_model::try_create(recording_of(other.steps));
    REQUIRE(mismatched.has_value());
    REQUIRE(sim::simulate(prompts, load_policy(policy), config(), *mismatched).has_value());
    CHECK(mismatched->num_differing() > 0);
    mismatched->restart();
    CHECK(mismatched->num_replayed() == 0);
  }
}

TEST_CASE("replay: steps that trade places take each other's times, the rest is scaled by the fit, plus the overhead",
          "[core][sim]") {
  const auto step = [](int tokens, int context) {
    sim::profile_sample s;
    s.prefill_seqs = 0;
    s.seqs = {{tokens, context}};
    return s;
  };
  auto a = step(1, 100), b = step(200, 200), c = step(1, 102);
  a.seconds = 0.010;
  b.seconds = 0.200;
  c.seconds = 0.012;
  // Too few steps to fit: a known fit stands in.
  sim::step_profile recording;
  recording.origin.source = "engine";
  recording.samples = {a, b, c};
  recording.fit.knots = {64, 256};
  recording.fit.per_token_above_s = {0.0, 0.0};
  recording.fit.fixed_s = 1e-3;
  recording.fit.per_token_s = 1e-4;
  recording.fit.per_kv_token_s = 1e-6;
  auto replay = sim::replay_cost_model::try_create(recording, 0.001);
  REQUIRE(replay.has_value());
  // b before a: the recorded b and a, in the simulated order.
  CHECK(replay->step_seconds(sample_shape(b)) == Approx(0.201));
  CHECK(replay->step_seconds(sample_shape(a)) == Approx(0.011));
  // A decode one position further than c reads: c's time (as many sequences and tokens,
  // the closest contexts), plus the fit's difference for the one position.
  const auto other = sample_shape(step(1, 103));
  const double other_fit = recording.fit.predict(other), c_fit = recording.fit.predict(sample_shape(c));
  REQUIRE(other_fit != c_fit);
  CHECK(replay->step_seconds(other) == Approx(0.012 + other_fit - c_fit + 0.001));
  // A size no recorded step has: the recorded step near it that the fit rates closest,
  // scaled by the fit's ratio; past the recording, the fit alone.
  const auto unseen = sample_shape(step(150, 150));
  const double unseen_fit = recording.fit.predict(unseen), b_fit = recording.fit.predict(sample_shape(b));
  CHECK(replay->step_seconds(unseen) == Approx(0.012 * unseen_fit / c_fit + 0.001));  // c: the one left near
  CHECK(replay->step_seconds(unseen) == Approx(unseen_fit + 0.001));  // none left near: the fit
  CHECK(replay->num_replayed() == 2);
  CHECK(replay->num_differing() == 3);
  replay->restart();
  CHECK(replay->step_seconds(unseen) == Approx(0.200 * unseen_fit / b_fit + 0.001));  // b: the closest
  CHECK(replay->step_seconds(sample_shape(a)) == Approx(0.011));
  CHECK_FALSE(sim::replay_cost_model::try_create(recording, -1.0).has_value());
}

TEST_CASE("replay: only steps recorded in the engine", "[core][sim]") {
  sim::step_profile grid;
  grid.origin.source = "grid";
  grid.samples.push_back({16, 1, 0, 0, 1e-3});
  CHECK_FALSE(sim::replay_cost_model::try_create(grid).has_value());
  sim::step_profile empty;
  empty.origin.source = "engine";
  CHECK_FALSE(sim::replay_cost_model::try_create(empty).has_value());
}

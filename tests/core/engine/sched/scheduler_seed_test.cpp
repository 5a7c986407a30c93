// The seed a step carries to the sampler: the request's own, or one the scheduler
// derives per sequence; never a shared default.
#include <catch2/catch.hpp>

#include <set>

#include "tests/core/engine/sched/sched_harness.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

seq_request seeded_request(seq_id id, std::optional<std::uint64_t> seed) {
  seq_request r;
  r.id = id;
  r.prompt = {1, 2, 3, 4};
  r.params.max_tokens = 4;
  r.seed = seed;
  return r;
}

/// The seed of every sampled sequence over the first steps, by sequence id.
std::map<seq_id, std::set<std::uint64_t>> step_seeds(sched_rig& s, fake_backend& backend, int num_steps) {
  std::map<seq_id, std::set<std::uint64_t>> seeds;
  for (int i = 0; i < num_steps && s.has_work(); ++i) {
    auto plan = s.schedule();
    REQUIRE(plan.has_value());
    if (plan->seqs.empty()) continue;
    for (const auto& st : plan->seqs)
      if (st.do_sample) seeds[st.id].insert(st.seed);
    auto res = backend.execute(*plan);
    REQUIRE(res.has_value());
    REQUIRE(s.apply(*res).has_value());
  }
  return seeds;
}

}  // namespace

TEST_CASE("scheduler: each step carries the request's seed, or a derived one per sequence", "[core][sched][sampling]") {
  auto s = make_scheduler(make_config(64, 8), 32, 4, load_policy("splitfuse"));
  fake_backend backend(32, 4, 32);
  REQUIRE(s.submit(seeded_request(1, 77)).has_value());
  REQUIRE(s.submit(seeded_request(2, 78)).has_value());
  REQUIRE(s.submit(seeded_request(3, std::nullopt)).has_value());
  REQUIRE(s.submit(seeded_request(4, std::nullopt)).has_value());
  const auto seeds = step_seeds(s, backend, 8);
  REQUIRE(seeds.size() == 4);
  for (const auto& [id, set] : seeds) CHECK(set.size() == 1);  // fixed for the sequence's life
  CHECK(*seeds.at(1).begin() == 77);
  CHECK(*seeds.at(2).begin() == 78);
  CHECK(*seeds.at(3).begin() != *seeds.at(4).begin());
}

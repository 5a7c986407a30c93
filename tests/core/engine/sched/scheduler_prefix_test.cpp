// The scheduler with prefix caching: admissions start after the cached prefix, the
// policy sees it, and outputs stay those of solo runs under sharing, eviction and
// preemption.
#include <catch2/catch.hpp>

#include "tests/core/engine/sched/sched_harness.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

seq_request with_prompt(seq_id id, std::vector<token_id> prompt, int max_tokens, std::string salt = {}) {
  seq_request r;
  r.id = id;
  r.prompt = std::move(prompt);
  r.params.max_tokens = max_tokens;
  r.cache_salt = std::move(salt);
  return r;
}

std::vector<token_id> prompt_of(int first, int n) {
  std::vector<token_id> p;
  for (int i = 0; i < n; ++i) p.push_back(1 + (first + i) % 30);
  return p;
}

/// Steps until nothing is left; returns the finished events.
std::vector<seq_event> drain(sched_rig& s, fake_backend& backend, std::vector<step_plan>* plans = nullptr) {
  std::vector<seq_event> finished;
  while (s.has_work()) {
    auto plan = s.schedule();
    REQUIRE(plan.has_value());
    check_step_invariants(s, *plan);
    if (plans != nullptr) plans->push_back(*plan);
    auto res = backend.execute(*plan);
    REQUIRE(res.has_value());
    auto events = s.apply(*res);
    REQUIRE(events.has_value());
    for (const auto& e : *events)
      if (e.type == seq_event::kind::finished) finished.push_back(e);
  }
  return finished;
}

}  // namespace

TEST_CASE("scheduler: a repeated prefix starts after its cached blocks", "[core][sched][prefix]") {
  auto config = make_config(64, 4);
  auto s = make_scheduler(config, 16, 4, load_policy("splitfuse"));
  fake_backend backend(16, 4, 32);
  auto first = with_prompt(1, prompt_of(0, 10), 3);  // 2 full blocks
  REQUIRE(s.submit(first).has_value());
  auto done1 = drain(s, backend);
  CHECK(done1.at(0).num_cached_tokens == 0);
  auto second = with_prompt(2, prompt_of(0, 13), 3);  // same 10, 3 more
  REQUIRE(s.submit(second).has_value());
  std::vector<step_plan> plans;
  auto done2 = drain(s, backend, &plans);
  REQUIRE(plans.size() >= 1);
  CHECK(plans[0].seqs.at(0).start_position == 8);   // whole blocks only
  CHECK(plans[0].seqs.at(0).tokens.size() == 5);
  CHECK(done2.at(0).num_cached_tokens == 8);
  CHECK(s.counters().num_prefix_cache_queries == 10 + 13);
  CHECK(s.counters().num_prefix_cache_hits == 8);
  // the same prompt again: everything cached but its last token
  auto third = with_prompt(3, prompt_of(0, 13), 2);
  REQUIRE(s.submit(third).has_value());
  plans.clear();
  drain(s, backend, &plans);
  CHECK(plans[0].seqs.at(0).start_position == 12);
  CHECK(plans[0].seqs.at(0).tokens.size() == 1);
  CHECK(plans[0].seqs.at(0).do_sample);
  // outputs are those of solo runs
  CHECK(s.num_rejected_decisions() == 0);
}

TEST_CASE("scheduler: a waiting sequence's cached prefix reaches the policy, salts keep apart",
          "[core][sched][prefix]") {
  auto config = make_config(64, 1);  // one seat: the others wait
  auto s = make_scheduler(config, 32, 4, load_policy("fcfs"));
  fake_backend backend(32, 4, 32);
  REQUIRE(s.submit(with_prompt(1, prompt_of(0, 9), 2)).has_value());
  drain(s, backend);
  REQUIRE(s.submit(with_prompt(4, prompt_of(50, 5), 8)).has_value());
  REQUIRE(s.submit(with_prompt(2, prompt_of(0, 11), 2)).has_value());
  REQUIRE(s.submit(with_prompt(3, prompt_of(0, 11), 2, "other")).has_value());
  auto plan = s.schedule();  // admits 4; sends the hashes of 2 and 3
  REQUIRE(plan.has_value());
  REQUIRE(plan->seqs.size() == 1);
  CHECK(s.find(2)->num_cached_hint == 8);  // from the grant's snapshot
  CHECK(s.find(3)->num_cached_hint == 0);  // another salt: nothing shared
  REQUIRE(s.apply(*backend.execute(*plan)).has_value());
  auto done = drain(s, backend);
  for (const auto& e : done) {
    if (e.id == 2) CHECK(e.num_cached_tokens == 8);
    if (e.id == 3) CHECK(e.num_cached_tokens == 0);
  }
}

TEST_CASE("scheduler: caching off computes everything and shares nothing", "[core][sched][prefix]") {
  auto config = make_config(64, 4);
  config.enable_prefix_caching = false;
  auto s = make_scheduler(config, 16, 4, load_policy("splitfuse"));
  fake_backend backend(16, 4, 32);
  REQUIRE(s.submit(with_prompt(1, prompt_of(0, 10), 3)).has_value());
  drain(s, backend);
  REQUIRE(s.submit(with_prompt(2, prompt_of(0, 13), 3)).has_value());
  std::vector<step_plan> plans;
  auto done = drain(s, backend, &plans);
  CHECK(plans[0].seqs.at(0).start_position == 0);
  CHECK(done.at(0).num_cached_tokens == 0);
  CHECK(s.counters().num_prefix_cache_queries == 0);
  CHECK(s.kv().pool().num_cached_blocks() == 0);
}

TEST_CASE("scheduler: randomized runs with shared prefixes, salts, eviction and preemption",
          "[core][sched][prefix][random]") {
  std::uint64_t num_preemptions = 0;
  for (const auto& name : shipped_policies()) {
    std::uint64_t num_hits = 0, num_evictions = 0;
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      INFO("policy " << name << " seed " << seed);
      random_run_options opt;
      opt.policy_name = name;
      opt.seed = seed * 7919 + name.size();
      opt.has_shared_prefixes = true;
      auto r = run_random(opt);  // invariants every step; no leak, no chain left at the end
      CHECK(r.requests.size() > 100);
      check_against_solo_runs(r, opt.vocab);
      num_hits += r.counters.num_prefix_cache_hits;
      num_evictions += r.num_evictions;
      num_preemptions += r.counters.num_preemptions;
    }
    // the runs did exercise what they claim to
    INFO("policy " << name);
    CHECK(num_hits > 0);
    CHECK(num_evictions > 0);
  }
  CHECK(num_preemptions > 0);  // not every policy preempts on these pools
}

TEST_CASE("scheduler: shared-prefix runs give the same outputs with caching on and off",
          "[core][sched][prefix][random]") {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    random_run_options opt;
    opt.policy_name = "splitfuse";
    opt.seed = seed;
    opt.has_shared_prefixes = true;
    auto on = run_random(opt);
    opt.enable_prefix_caching = false;
    auto off = run_random(opt);
    CHECK(on.counters.num_prefix_cache_hits > 0);
    CHECK(off.counters.num_prefix_cache_hits == 0);
    REQUIRE(on.requests.size() == off.requests.size());
    for (const auto& [id, out] : off.outputs) {
      INFO("sequence " << id);
      if (off.reasons.at(id) == finish_reason::cancelled || on.reasons.at(id) == finish_reason::cancelled) continue;
      CHECK(on.outputs[id] == out);
    }
  }
}

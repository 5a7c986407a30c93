#include <catch2/catch.hpp>

#include <random>

#include "tests/core/sched_harness.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

seq_request make_request(seq_id id, int prompt_len, int max_tokens) {
  seq_request r;
  r.id = id;
  for (int i = 0; i < prompt_len; ++i) r.prompt.push_back(1 + (static_cast<int>(id) * 7 + i) % 30);
  r.params.max_tokens = max_tokens;
  return r;
}

step_loop::executor_fn on(fake_backend& backend) {
  return [&backend](const step_plan& plan) { return backend.execute(plan); };
}

/// (id, token or -1 for a finish) of every event.
std::vector<std::pair<seq_id, int>> flatten(const std::vector<seq_event>& events) {
  std::vector<std::pair<seq_id, int>> out;
  for (const auto& e : events) out.emplace_back(e.id, e.type == seq_event::kind::token ? e.token.token : -1);
  return out;
}

}  // namespace

TEST_CASE("step_loop: a whole step gives the events of its halves", "[core][sched][step_loop]") {
  auto whole = make_scheduler(make_config(8, 3), 16, 4, load_policy("splitfuse"));
  auto halves = make_scheduler(make_config(8, 3), 16, 4, load_policy("splitfuse"));
  fake_backend whole_backend(16, 4, 32), halves_backend(16, 4, 32);
  for (seq_id id = 1; id <= 4; ++id) {
    REQUIRE(whole.submit(make_request(id, 3 + int(id) * 2, 4)).has_value());
    REQUIRE(halves.submit(make_request(id, 3 + int(id) * 2, 4)).has_value());
  }
  int num_steps = 0;
  while (whole.has_work()) {
    auto out = whole.step(on(whole_backend));
    REQUIRE(out.has_value());
    REQUIRE(!out->failure);
    REQUIRE(out->has_run());
    check_step_invariants(whole, step_plan{});
    auto plan = halves.schedule();
    REQUIRE(plan.has_value());
    auto res = halves_backend.execute(*plan);
    REQUIRE(res.has_value());
    auto events = halves.apply(*res);
    REQUIRE(events.has_value());
    CHECK(out->step_id == plan->step_id);
    CHECK(out->shape.num_tokens() == plan->num_tokens());
    CHECK(out->shape.num_seqs() == int(plan->seqs.size()));
    CHECK(flatten(out->events) == flatten(*events));
    ++num_steps;
  }
  CHECK(!halves.has_work());
  CHECK(num_steps > 4);
  // The last finishes' blocks go back with one more step, which runs nothing.
  REQUIRE(whole.loop().needs_step());
  auto last = whole.step(on(whole_backend));
  REQUIRE(last.has_value());
  CHECK(!last->has_run());
  CHECK(last->events.empty());
  CHECK(!whole.loop().needs_step());
  CHECK(whole.num_free_blocks() == 16);
}

TEST_CASE("step_loop: the shape gives each sequence's new tokens and context", "[core][sched][step_loop]") {
  auto s = make_scheduler(make_config(4, 2), 16, 4, load_policy("splitfuse"));
  fake_backend backend(16, 4, 32);
  REQUIRE(s.submit(make_request(1, 10, 3)).has_value());
  std::vector<std::pair<int, int>> seen;
  while (s.has_work()) {
    auto out = s.step(on(backend));
    REQUIRE(out.has_value());
    REQUIRE(out->shape.num_seqs() == 1);
    seen.emplace_back(out->shape.seqs[0].num_tokens, out->shape.seqs[0].num_context_tokens);
  }
  // A 10-token prompt in chunks of 4, then two decodes (the third token ends it).
  const std::vector<std::pair<int, int>> expected = {{4, 4}, {4, 8}, {2, 10}, {1, 11}, {1, 12}};
  CHECK(seen == expected);
}

TEST_CASE("step_loop: a failed executor finishes the step's sequences with its error", "[core][sched][step_loop]") {
  auto s = make_scheduler(make_config(16, 2), 16, 4, load_policy("fcfs"));
  fake_backend backend(16, 4, 32);
  REQUIRE(s.submit(make_request(1, 5, 4)).has_value());
  REQUIRE(s.submit(make_request(2, 5, 4)).has_value());
  REQUIRE(s.submit(make_request(3, 5, 4)).has_value());  // waits: two at a time
  auto out = s.step([](const step_plan&) -> result<step_result> {
    return make_error(errc::backend_error, "device lost");
  });
  REQUIRE(out.has_value());
  REQUIRE(out->failure.has_value());
  CHECK(out->failure->code == errc::backend_error);
  CHECK(out->failure->message.find("device lost") != std::string::npos);
  REQUIRE(out->events.size() == 2);
  for (const auto& e : out->events) {
    CHECK(e.type == seq_event::kind::finished);
    CHECK(e.reason == finish_reason::error);
  }
  // The engine serves on: 3 runs to its end, and every block comes back.
  std::vector<seq_event> rest;
  while (s.loop().needs_step()) {
    auto next = s.step(on(backend));
    REQUIRE(next.has_value());
    CHECK(!next->failure);
    rest.insert(rest.end(), next->events.begin(), next->events.end());
  }
  REQUIRE(!rest.empty());
  CHECK(rest.back().id == 3);
  CHECK(rest.back().reason == finish_reason::length);
  CHECK(s.num_free_blocks() == 16);
  CHECK(s.kv().num_sequences() == 0);
}

TEST_CASE("step_loop: step() refuses to run while a planned step is not applied", "[core][sched][step_loop]") {
  auto s = make_scheduler(make_config(16, 2), 16, 4, load_policy("fcfs"));
  fake_backend backend(16, 4, 32);
  REQUIRE(s.submit(make_request(1, 5, 2)).has_value());
  auto plan = s.schedule();
  REQUIRE(plan.has_value());
  REQUIRE(!plan->seqs.empty());
  auto out = s.step(on(backend));
  REQUIRE(!out.has_value());
  CHECK(out.error().code == errc::internal);
}

TEST_CASE("step_loop: random arrivals under every shipped policy keep the invariants and free every block",
          "[core][sched][step_loop]") {
  for (const auto& name : shipped_policies()) {
    INFO("policy " << name);
    std::mt19937_64 rng(7);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const int num_blocks = 12, block_size = 4;
    auto s = make_scheduler(make_config(40, 4, 40), num_blocks, block_size, load_policy(name));
    fake_backend backend(num_blocks, block_size, 32);
    std::map<seq_id, int> num_tokens, max_tokens;
    seq_id next_id = 1;
    for (int step = 0; step < 3000 && (step < 200 || s.loop().needs_step()); ++step) {
      if (step < 200 && pick(0, 2) == 0) {
        auto r = make_request(next_id, pick(1, 24), pick(1, 12));
        max_tokens[r.id] = r.params.max_tokens;
        REQUIRE(s.submit(r).has_value());
        ++next_id;
      }
      auto out = s.step(on(backend));
      REQUIRE(out.has_value());
      REQUIRE(!out->failure);
      check_step_invariants(s, step_plan{});
      REQUIRE(out->shape.num_tokens() <= 40);
      for (const auto& e : out->events) {
        if (e.type == seq_event::kind::token) ++num_tokens[e.id];
        else CHECK(e.reason == finish_reason::length);
      }
    }
    CHECK(!s.loop().needs_step());
    CHECK(s.num_free_blocks() == num_blocks);
    CHECK(s.kv().num_known_sequences() == 0);
    for (const auto& [id, n] : max_tokens) {
      INFO("sequence " << id);
      CHECK(num_tokens[id] == n);
    }
  }
}

// A failed step finishes exactly the sequences of that step, with the error value it
// was given, frees their blocks, and leaves the others to run on.
#include <catch2/catch.hpp>

#include "tests/core/engine/sched/sched_harness.hpp"

using namespace inflight;
using namespace inflight::test;

TEST_CASE("scheduler: fail_step fails the step's sequences only and frees their blocks", "[core][sched][faults]") {
  auto s = make_scheduler(make_config(64, 2), 16, 4, load_policy("fcfs"));
  fake_backend backend(16, 4, 32);
  for (seq_id id = 1; id <= 3; ++id) {
    seq_request r;
    r.id = id;
    r.prompt = {1, 2, 3, 4, 5};
    r.params.max_tokens = 4;
    REQUIRE(s.submit(r).has_value());
  }
  auto first = s.schedule();  // 1 and 2 (two at a most); 3 waits
  REQUIRE(first.has_value());
  REQUIRE(first->seqs.size() == 2);
  REQUIRE(s.apply(*backend.execute(*first)).has_value());
  auto second = s.schedule();
  REQUIRE(second.has_value());
  REQUIRE(second->seqs.size() == 2);
  const auto events = s.fail_step({errc::backend_error, "device lost"});
  REQUIRE(events.size() == 2);
  for (const auto& ev : events) {
    CHECK((ev.id == 1 || ev.id == 2));
    CHECK(ev.reason == finish_reason::error);
    REQUIRE(ev.cause.has_value());
    CHECK(ev.cause->code == errc::backend_error);
  }
  CHECK(s.find(3) != nullptr);
  // Sequence 3 runs to its end afterwards.
  std::vector<seq_event> rest;
  for (int step = 0; s.has_work() && step < 100; ++step) {
    auto plan = s.schedule();
    REQUIRE(plan.has_value());
    if (plan->seqs.empty()) continue;
    auto applied = s.apply(*backend.execute(*plan));
    REQUIRE(applied.has_value());
    rest.insert(rest.end(), applied->begin(), applied->end());
  }
  REQUIRE_FALSE(rest.empty());
  CHECK(rest.back().id == 3);
  CHECK(rest.back().reason == finish_reason::length);
  REQUIRE(s.schedule().has_value());  // returns the last blocks
  CHECK(s.num_free_blocks() == 16);
}

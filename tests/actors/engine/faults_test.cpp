// Backend faults (injected with [debug] fail_step): a failed step fails exactly its
// own requests with a backend_error, frees their blocks, and the engine serves on;
// health follows the failures honestly.
#include <catch2/catch.hpp>

#include "tests/actors/engine/engine_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

struct submitted {
  request_id id = 0;
  std::shared_ptr<collect_sink> sink = std::make_shared<collect_sink>();
};

submitted submit(engine& eng, const std::string& prompt, int max_tokens) {
  submitted s;
  auto req = greedy_request(eng, prompt, max_tokens);
  req.params.ignore_eos = true;
  auto id = eng.submit(req, s.sink);
  REQUIRE(id.has_value());
  s.id = *id;
  return s;
}

}  // namespace

TEST_CASE("faults: a failed step fails exactly its requests, the engine serves on", "[engine][faults]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  // One sequence at a time: step 1 is a's prefill, step 2 (a's first decode) fails,
  // b waits behind a whatever the timing and never shares a step with it.
  auto d = stories_deployment("fcfs", 256, 256, 1);
  d.debug.fail_step = 2;
  auto eng = start_engine(d);
  auto a = submit(*eng, "Once upon a time", 8);
  auto b = submit(*eng, "The cat", 8);
  REQUIRE(a.sink->wait());
  REQUIRE(b.sink->wait());
  const auto f = a.sink->finish();
  CHECK(f.reason == finish_reason::error);
  REQUIRE(f.cause.has_value());
  CHECK(f.cause->code == errc::backend_error);
  CHECK_THAT(f.cause->message, Catch::Contains("injected failure of backend step 2"));
  CHECK(f.completion_tokens == 1);  // the token of step 1 only
  CHECK(b.sink->finish().reason == finish_reason::length);
  CHECK(b.sink->tokens().size() == 8);
  auto h = eng->health();
  CHECK(h.is_healthy);  // one failure is the failed requests' problem, not the engine's
  CHECK(h.num_failed_steps == 1);
  CHECK(h.num_consecutive_failed_steps == 0);  // b's steps succeeded since
  CHECK_THAT(h.last_step_error, Catch::Contains("injected failure"));
  CHECK(all_blocks_return(*eng));
  CHECK(eng->snapshot().num_waiting_to_start == 0);
  // And a new request is served as if nothing happened.
  auto later = submit(*eng, "Lily", 4);
  REQUIRE(later.sink->wait());
  CHECK(later.sink->finish().reason == finish_reason::length);
}

TEST_CASE("faults: steps failing in a row make the engine unhealthy until one succeeds", "[engine][faults]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  auto d = stories_deployment("fcfs", 256, 256, 1);
  d.engine.unhealthy_after_failed_steps = 3;
  d.debug.fail_step = 1;
  d.debug.num_failed_steps = 3;  // steps 1, 2 and 3 fail: each request's first step
  auto eng = start_engine(d);
  for (int i = 1; i <= 3; ++i) {
    auto r = submit(*eng, "Once upon a time", 4);
    REQUIRE(r.sink->wait());
    CHECK(r.sink->finish().reason == finish_reason::error);
    const auto h = eng->health();
    CHECK(h.num_consecutive_failed_steps == i);
    CHECK(h.is_healthy == (i < 3));
  }
  // Still accepting: the next request's step succeeds and health comes back.
  auto ok = submit(*eng, "Once upon a time", 4);
  REQUIRE(ok.sink->wait());
  CHECK(ok.sink->finish().reason == finish_reason::length);
  CHECK(eng->health().is_healthy);
  CHECK(eng->health().num_failed_steps == 3);
  CHECK(all_blocks_return(*eng));
}

TEST_CASE("faults: a backend that fails its warm-up fails engine::start with the reason", "[engine][faults]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  auto d = stories_deployment("fcfs", 256, 256, 1);
  d.debug.fail_warm_up = true;
  auto model = load_model(d.model);
  REQUIRE(model.has_value());
  auto eng = engine::start(d, std::move(*model));
  REQUIRE_FALSE(eng.has_value());
  CHECK(eng.error().code == errc::backend_error);
  CHECK_THAT(eng.error().message, Catch::Contains("warm-up") && Catch::Contains("debug.fail_warm_up"));
  // The same deployment without the fault starts, and its first served step is step 1
  // of the debug backend's count: the warm-up is not a step.
  d.debug.fail_warm_up = false;
  d.debug.fail_step = 1;
  auto started = start_engine(d);
  auto r = submit(*started, "Once upon a time", 4);
  REQUIRE(r.sink->wait());
  CHECK(r.sink->finish().reason == finish_reason::error);
}

#include <catch2/catch.hpp>

#include <thread>
#include <vector>

#include "core/engine/sched/admission_gate.hpp"

using namespace inflight;

TEST_CASE("admission gate: bounded in requests and in prompt tokens", "[core][sched][admission]") {
  admission_gate gate({3, 100});
  REQUIRE(gate.try_enter(40).has_value());
  REQUIRE(gate.try_enter(40).has_value());
  auto over_tokens = gate.try_enter(21);
  REQUIRE_FALSE(over_tokens.has_value());
  CHECK(over_tokens.error().code == errc::queue_full);
  CHECK_THAT(over_tokens.error().message, Catch::Contains("server.max_waiting_tokens"));
  CHECK(gate.num_requests() == 2);  // a refusal leaves nothing behind
  CHECK(gate.num_tokens() == 80);
  REQUIRE(gate.try_enter(20).has_value());
  auto over_requests = gate.try_enter(1);
  REQUIRE_FALSE(over_requests.has_value());
  CHECK(over_requests.error().code == errc::queue_full);
  CHECK_THAT(over_requests.error().message, Catch::Contains("server.max_waiting_requests"));
  gate.leave(40);
  CHECK(gate.try_enter(1).has_value());
  // A prompt no queue could ever hold is the client's error, not a load condition.
  auto huge = admission_gate({3, 100}).try_enter(101);
  REQUIRE_FALSE(huge.has_value());
  CHECK(huge.error().code == errc::invalid_argument);
}

TEST_CASE("admission gate: concurrent callers never pass a bound", "[core][sched][admission]") {
  admission_gate gate({50, 1 << 30});
  std::atomic<int> num_admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i)
        if (gate.try_enter(1)) ++num_admitted;
    });
  for (auto& t : threads) t.join();
  CHECK(num_admitted == 50);
  CHECK(gate.num_requests() == 50);
  CHECK(gate.num_tokens() == 50);
}

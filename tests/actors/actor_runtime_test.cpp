// The actor runtime's settings: while nothing is sent (as while the executor computes a
// step), the actor workers sleep instead of polling for jobs.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <caf/all.hpp>
#include <chrono>
#include <thread>

#include "actors/actor_runtime.hpp"

using namespace inflight;

namespace {

/// Voluntary context switches of every thread of this process so far: each sleep or
/// wait of a polling worker counts one.
long voluntary_switches() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_nvcsw;
}

}  // namespace

TEST_CASE("idle actor workers block instead of polling after a burst of messages", "[actors][runtime]") {
  caf::actor_system_config cfg;
  configure_compute_runtime(cfg);
  long switches = 0;
  {
    caf::actor_system sys{cfg};
    auto echo = sys.spawn([]() -> caf::behavior { return {[](int x) { return x + 1; }}; });
    {
      caf::scoped_actor self{sys};
      for (int i = 0; i < 50; ++i) {
        self->request(echo, caf::infinite, i).receive([&](int y) { CHECK(y == i + 1); }, [](caf::error&) {});
      }
    }
    // CAF's default workers would now poll: 500 sleeps of 50 us each, then a wake-up
    // every 10 ms, per worker (over a thousand switches in this window).
    const long before = voluntary_switches();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    switches = voluntary_switches() - before;
    caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
  }
  INFO("voluntary context switches while idle: " << switches);
  CHECK(switches < 30);
}

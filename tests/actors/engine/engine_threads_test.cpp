// The engine API is used from many threads (io threads, benchmark clients): shutting
// down from another thread than the one that submitted must not hang.
#include <future>
#include <thread>

#include "tests/actors/engine/engine_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

TEST_CASE("engine: submit on one thread, shut down from another while it lives", "[engine][threads]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  auto d = stories_deployment();
  d.debug.step_delay_s = 0.01;  // the request cannot finish within the 0.01 s grace
  auto eng = start_engine(d);
  std::promise<void> submitted, done;
  auto sink = std::make_shared<collect_sink>();
  std::thread client([&] {
    auto req = greedy_request(*eng, "Once upon a time", 100000);
    req.params.ignore_eos = true;
    REQUIRE(eng->submit(req, sink).has_value());
    eng->snapshot();
    submitted.set_value();
    done.get_future().wait();  // stays alive across the shutdown
  });
  submitted.get_future().wait();
  auto finished = std::async(std::launch::async, [&] { eng->shutdown(0.01); });
  const bool is_done = finished.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  done.set_value();
  client.join();
  REQUIRE(is_done);
  CHECK(sink->finish().reason == finish_reason::aborted);
}
TEST_CASE("engine: submit on a client thread that outlives the shutdown", "[engine][threads]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  auto d = stories_deployment();
  d.debug.step_delay_s = 0.01;  // the request cannot finish within the 0.01 s grace
  auto eng = start_engine(d);
  std::promise<void> submitted, done;
  auto sink = std::make_shared<collect_sink>();
  std::thread client([&] {
    auto req = greedy_request(*eng, "Once upon a time", 100000);
    req.params.ignore_eos = true;
    REQUIRE(eng->submit(req, sink).has_value());
    submitted.set_value();
    done.get_future().wait();
  });
  submitted.get_future().wait();
  eng->shutdown(0.01);
  done.set_value();
  client.join();
  CHECK(sink->finish().reason == finish_reason::aborted);
}

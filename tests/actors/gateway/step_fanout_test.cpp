// The fan-out of step summaries to feed readers: bounds, wake-ups, the subscriber limit,
// and the engine's sink installed only while someone reads.
#include <chrono>
#include <thread>

#include "actors/gateway/step_fanout.hpp"
#include "tests/actors/engine/engine_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

step_summary decode_step(std::uint64_t id) {
  step_summary s;
  s.first_step_id = s.last_step_id = id;
  s.seqs = {{1, 0, 1, int(id)}};
  s.num_decode_tokens = 1;
  return s;
}

}  // namespace

TEST_CASE("step fanout: each reader's queue is bounded and wakes it once per drain", "[gateway][ui]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  auto eng = start_engine(stories_deployment());
  server_settings settings;
  settings.events_max_subscribers = 2;
  settings.events_queue_size = 8;
  auto fanout = std::make_shared<gateway::step_fanout>(*eng, settings);

  auto fast = fanout->try_subscribe();
  auto slow = fanout->try_subscribe();
  REQUIRE(fast.has_value());
  REQUIRE(slow.has_value());
  auto third = fanout->try_subscribe();
  REQUIRE_FALSE(third.has_value());
  CHECK(third.error().status == 503);
  CHECK(third.error().code == "too_many_subscribers");

  int num_wakes = 0;
  (*fast)->set_wake([&] { ++num_wakes; });
  CHECK((*fast)->take().empty());  // arms the wake-up
  fanout->on_step(decode_step(1));
  fanout->on_step(decode_step(2));
  CHECK(num_wakes == 1);           // once, until the reader takes again
  CHECK((*fast)->take().size() == 2);
  fanout->on_step(decode_step(3));
  CHECK(num_wakes == 1);           // it took something: no wake-up armed
  CHECK((*fast)->take().size() == 1);
  CHECK((*fast)->take().empty());
  fanout->on_step(decode_step(4));
  CHECK(num_wakes == 2);

  // The slow reader has not taken anything: 1000 steps fit in 8 merged entries.
  for (std::uint64_t i = 5; i <= 1000; ++i) fanout->on_step(decode_step(i));
  auto backlog = (*slow)->take();
  CHECK(backlog.size() <= 8);
  int num_steps = 0, num_tokens = 0;
  for (const auto& e : backlog) {
    num_steps += e.num_steps;
    num_tokens += e.num_decode_tokens;
  }
  CHECK(num_steps == 1000);
  CHECK(num_tokens == 1000);
  CHECK(backlog.front().first_step_id == 1);
  CHECK(backlog.back().last_step_id == 1000);

  slow->reset();
  CHECK(fanout->num_subscribers() == 1);
  CHECK(fanout->try_subscribe().has_value());  // a place freed (and is given back at once)
}

TEST_CASE("step fanout: the engine summarises steps only while someone subscribes", "[gateway][ui]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  auto eng = start_engine(stories_deployment());
  server_settings settings;
  auto fanout = std::make_shared<gateway::step_fanout>(*eng, settings);
  auto run = [&] {
    auto sink = std::make_shared<collect_sink>();
    REQUIRE(eng->submit(greedy_request(*eng, "Once upon a time", 5), sink).has_value());
    REQUIRE(sink->wait());
  };
  CHECK_FALSE(eng->has_step_sink());
  {
    auto sub = fanout->try_subscribe();
    REQUIRE(sub.has_value());
    CHECK(eng->has_step_sink());
    auto second = fanout->try_subscribe();
    second->reset();
    CHECK(eng->has_step_sink());  // one reader left
    run();
    // The request can finish before its last step's summary reaches the fanout: read
    // until all four decodes arrived (the deadline only bounds a failing run).
    int num_decode = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (num_decode < 4 && std::chrono::steady_clock::now() < deadline) {
      for (const auto& s : (*sub)->take()) num_decode += s.num_decode_tokens;
      if (num_decode < 4) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    for (const auto& s : (*sub)->take()) num_decode += s.num_decode_tokens;
    CHECK(num_decode == 4);
  }
  CHECK_FALSE(eng->has_step_sink());  // the last reader left: the scheduler stops summarising
}

TEST_CASE("step fanout: a reader gets only its engine's steps, so aggregation never mixes engines", "[gateway][ui]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  auto eng = start_engine(stories_deployment());
  server_settings settings;
  settings.events_queue_size = 4;
  auto fanout = std::make_shared<gateway::step_fanout>(*eng, settings);
  auto a = fanout->try_subscribe("10.0.0.1:9000");
  auto b = fanout->try_subscribe("10.0.0.2:9000");
  auto local = fanout->try_subscribe();
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  REQUIRE(local.has_value());
  CHECK((*a)->engine() == "10.0.0.1:9000");
  CHECK((*local)->engine().empty());
  // Interleaved steps of two engines, more than a queue holds: each reader's merged
  // entries hold only its own engine's steps, all of them.
  for (std::uint64_t i = 1; i <= 40; ++i) {
    auto s = decode_step(i);
    s.engine = i % 2 == 1 ? "10.0.0.1:9000" : "10.0.0.2:9000";
    fanout->on_step(s);
  }
  const auto count = [](const std::vector<step_summary>& entries, const std::string& engine) {
    int n = 0;
    for (const auto& e : entries) {
      CHECK(e.engine == engine);
      n += e.num_steps;
    }
    return n;
  };
  CHECK(count((*a)->take(), "10.0.0.1:9000") == 20);
  CHECK(count((*b)->take(), "10.0.0.2:9000") == 20);
  CHECK((*local)->take().empty());
  fanout->on_step(decode_step(41));  // the engine in this process
  CHECK(count((*local)->take(), "") == 1);
  CHECK((*a)->take().empty());
}

// The router's engine (actors/cluster/routed_engine.hpp) in one process: engines served by
// engine_hosts of their own network actor systems, reached over loopback TCP. A request
// whose engine goes away before its first token is sent again to another engine, and the
// client sees only a normal, complete answer; one whose engine goes away mid-stream ends
// with an error; with no engine left, submits are refused as unavailable.
#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <chrono>
#include <thread>

#include "actors/cluster/remote_engine.hpp"
#include "actors/cluster/routed_engine.hpp"
#include "tests/actors/engine/engine_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

/// Heartbeats every 0.2 s; 2 s of silence is a lost peer.
struct net_config : wire_system_config {
  net_config() : wire_system_config(0.2, 2.0) {}
};

/// One engine with its own network side.
struct served_engine {
  std::unique_ptr<engine> eng;
  net_config cfg;
  std::unique_ptr<caf::actor_system> net;
  std::unique_ptr<engine_host> host;

  explicit served_engine(const deployment& d) {
    eng = start_engine(d);
    net = std::make_unique<caf::actor_system>(cfg);
    auto h = engine_host::start(*net, *eng, "127.0.0.1", 0);
    REQUIRE(h.has_value());
    host = std::move(*h);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(host->port()); }
  ~served_engine() {
    eng->shutdown(5.0);  // before the network side, which its sinks send through
  }
};

std::unique_ptr<routed_engine> start_router(caf::actor_system& net, const deployment& d,
                                            std::vector<std::string> engines,
                                            const std::string& policy = "round_robin") {
  router_options o;
  o.engines = std::move(engines);
  o.policy = policy;  // round_robin: the first request goes to the first engine
  o.plugin_dir = INFLIGHT_TEST_PLUGIN_DIR;
  o.reconnect_interval_s = 0.2;
  auto model = load_model(d.model);
  REQUIRE(model.has_value());
  model->weights.reset();
  auto r = routed_engine::start(d, std::move(*model), net, o);
  INFO((r ? std::string() : r.error().message));
  REQUIRE(r.has_value());
  return std::move(*r);
}

}  // namespace

TEST_CASE("routed engine: a request whose engine goes away before its first token runs on another",
          "[actors][router]") {
  auto d = stories_deployment();
  if (d.model.path.empty()) return;
  auto slow = d;
  slow.debug.step_delay_s = 30.0;  // its first step would take 30 s: no token before it goes
  auto a = std::make_unique<served_engine>(slow);
  served_engine b(d);
  net_config cfg;
  caf::actor_system net{cfg};
  auto router = start_router(net, d, {a->address(), b.address()});
  REQUIRE(router->num_connected() == 2);

  auto expected = std::make_shared<collect_sink>();
  REQUIRE(b.eng->submit(greedy_request(*b.eng, "Once upon a time", 24), expected));
  REQUIRE(expected->wait());

  auto sink = std::make_shared<collect_sink>();
  auto id = router->submit(greedy_request(*b.eng, "Once upon a time", 24), sink);
  REQUIRE(id.has_value());
  CHECK(router->num_routed(0) == 1);
  // Engine a goes away (its host stops: the gateway side sees its actor down).
  a->host.reset();
  REQUIRE(sink->wait(30.0));
  CHECK(sink->finish().reason == finish_reason::length);
  CHECK(sink->text() == expected->text());
  CHECK(router->num_retried() == 1);
  CHECK(router->num_routed(1) >= 1);
  CHECK(all_blocks_return(*b.eng));
  // Engine a's request was cancelled when its host stopped: its blocks come back too.
  a.reset();
}

TEST_CASE("routed engine: mid-stream faults end with an error, no engine left is unavailable", "[actors][router]") {
  auto d = stories_deployment();
  if (d.model.path.empty()) return;
  auto a = std::make_unique<served_engine>(d);
  net_config cfg;
  caf::actor_system net{cfg};
  auto router = start_router(net, d, {a->address()});
  auto sink = std::make_shared<collect_sink>();
  auto r = greedy_request(*a->eng, "Once upon a time", 400);
  r.params.ignore_eos = true;
  REQUIRE(router->submit(r, sink).has_value());
  REQUIRE(wait_until([&] { return sink->num_events() > 0; }));
  a->host.reset();
  REQUIRE(sink->wait(10.0));
  CHECK(sink->finish().reason == finish_reason::error);
  REQUIRE(sink->finish().cause.has_value());
  CHECK(sink->finish().cause->code == errc::unavailable);
  CHECK(router->num_retried() == 0);  // it had streamed: no retry
  CHECK(wait_until([&] { return router->num_connected() == 0; }, 10.0));
  auto refused = router->submit(greedy_request(*a->eng, "Hi", 4), std::make_shared<collect_sink>());
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code == errc::unavailable);
  CHECK_FALSE(router->health().is_healthy);
  CHECK(router->snapshot().is_idle);
}

namespace {

/// A prompt of many full blocks (16 tokens each) that all start the same way.
std::string shared_prompt(const std::string& ending) {
  return "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
         "friends. One day, she saw a big red ball under a tree. She ran to the ball and picked it up. " +
         ending;
}

bool run(routed_engine& router, const engine& eng, const std::string& prompt) {
  auto sink = std::make_shared<collect_sink>();
  if (!router.submit(greedy_request(eng, prompt, 2), sink)) return false;
  return sink->wait(30.0) && sink->finish().reason != finish_reason::error;
}

}  // namespace

TEST_CASE("routed engine: the engines' reports fill the prefix index, prefix routing follows it",
          "[actors][router]") {
  auto d = stories_deployment();
  if (d.model.path.empty()) return;
  served_engine a(d), b(d);
  net_config cfg;
  caf::actor_system net{cfg};
  auto router = start_router(net, d, {a.address(), b.address()}, "prefix");
  REQUIRE(router->num_connected() == 2);
  REQUIRE(run(*router, *a.eng, shared_prompt("The end.")));
  // The engine reports its cached blocks after the step that released them.
  REQUIRE(wait_until([&] { return router->num_indexed_blocks(0) + router->num_indexed_blocks(1) > 0; }));
  const int home = router->num_indexed_blocks(0) > 0 ? 0 : 1;
  CHECK(router->num_indexed_blocks(1 - home) == 0);
  const auto routed_before = router->num_routed(home);
  for (const char* ending : {"Lily smiled.", "Mom laughed.", "It was fun."})
    REQUIRE(run(*router, *a.eng, shared_prompt(ending)));
  CHECK(router->num_routed(home) == routed_before + 3);
  CHECK(router->num_routed(1 - home) == 0);
  served_engine& cached = home == 0 ? a : b;
  CHECK(cached.eng->snapshot().gauges.num_prefix_cache_hits >= 3 * 16 * 4);

  // A second router, connected now, gets the same index from the engines' full reports.
  auto late = start_router(net, d, {a.address(), b.address()}, "prefix");
  REQUIRE(wait_until([&] { return late->num_indexed_blocks(home) == router->num_indexed_blocks(home); }));
  CHECK(late->num_indexed_blocks(1 - home) == 0);

  // An engine that goes away leaves the index.
  cached.host.reset();
  REQUIRE(wait_until([&] { return router->num_connected() == 1; }, 10.0));
  CHECK(wait_until([&] { return router->num_indexed_blocks(home) == 0; }, 10.0));
}

TEST_CASE("routed engine: an engine with another block size leaves the index empty", "[actors][router]") {
  auto d = stories_deployment();
  if (d.model.path.empty()) return;
  served_engine a(d);
  auto other = d;
  other.engine.block_size = 8;
  net_config cfg;
  caf::actor_system net{cfg};
  auto router = start_router(net, other, {a.address()}, "prefix");
  // The full report on connect is refused already, and so is every later one.
  REQUIRE(wait_until([&] { return router->has_block_size_mismatch(0); }));
  REQUIRE(run(*router, *a.eng, shared_prompt("The end.")));
  REQUIRE(all_blocks_return(*a.eng));
  CHECK(router->num_indexed_blocks(0) == 0);
  CHECK(router->num_routed(0) == 1);  // it still routes, by load
}

TEST_CASE("routed engine: an engine that drains leaves the choice at once, its streams finish",
          "[actors][router][drain]") {
  auto d = stories_deployment();
  if (d.model.path.empty()) return;
  served_engine a(d), b(d);
  net_config cfg;
  caf::actor_system net{cfg};
  auto router = start_router(net, d, {a.address(), b.address()});
  REQUIRE(router->num_serving() == 2);
  // A stream running on a when it starts to drain.
  auto running = std::make_shared<collect_sink>();
  auto long_request = greedy_request(*a.eng, "Once upon a time", 200);
  long_request.params.ignore_eos = true;
  REQUIRE(router->submit(long_request, running).has_value());
  CHECK(router->num_routed(0) == 1);  // round_robin: the first request goes to a
  REQUIRE(wait_until([&] { return running->num_events() > 0; }));

  a.host->drain();  // as `serve --role engine` does on SIGTERM, before the engine stops taking requests
  REQUIRE(wait_until([&] { return router->is_draining(0); }, 10.0));
  CHECK(router->num_serving() == 1);
  CHECK(router->num_connected() == 2);  // still there: it finishes what it has
  CHECK(router->health().is_healthy);
  // Round robin would send every other request to a: none goes there now.
  for (int i = 0; i < 4; ++i) REQUIRE(run(*router, *b.eng, "Once upon a time"));
  CHECK(router->num_routed(0) == 1);
  CHECK(router->num_routed(1) == 4);
  CHECK(router->num_retried() == 0);  // none needed: the word came first
  REQUIRE(running->wait(30.0));
  CHECK(running->finish().reason == finish_reason::length);

  SECTION("with every engine draining, a request is refused as unavailable and the router is unhealthy") {
    b.host->drain();
    REQUIRE(wait_until([&] { return router->num_serving() == 0; }, 10.0));
    auto refused = router->submit(greedy_request(*b.eng, "Hi", 4), std::make_shared<collect_sink>());
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code == errc::unavailable);  // 503 with Retry-After at the gateway
    CHECK_FALSE(router->health().is_healthy);
    CHECK(router->health().last_step_error == "every reachable engine is draining");
  }
  SECTION("a router that connects to a draining engine hears it at once") {
    auto late = start_router(net, d, {a.address(), b.address()});
    REQUIRE(wait_until([&] { return late->is_draining(0); }, 10.0));
    CHECK_FALSE(late->is_draining(1));
  }
}

TEST_CASE("routed engine: a request an engine refuses as shutting down runs on another", "[actors][router][drain]") {
  auto d = stories_deployment();
  if (d.model.path.empty()) return;
  served_engine a(d), b(d);
  net_config cfg;
  caf::actor_system net{cfg};
  auto router = start_router(net, d, {a.address(), b.address()});
  // Engine a stops taking requests without a word to the router (its drain message not
  // there yet): the first request, round robin's for a, is refused and goes to b.
  a.eng->shutdown(0.0);
  auto sink = std::make_shared<collect_sink>();
  REQUIRE(router->submit(greedy_request(*b.eng, "Once upon a time", 8), sink).has_value());
  REQUIRE(sink->wait(30.0));
  CHECK(sink->finish().reason == finish_reason::length);
  CHECK(router->num_routed(0) == 1);
  CHECK(router->num_routed(1) == 1);
  CHECK(router->is_draining(0));  // out of the choice from then on
  REQUIRE(run(*router, *b.eng, "Once upon a time"));
  CHECK(router->num_routed(0) == 1);
}

TEST_CASE("routed engine: a request its draining engine aborts before its first token runs on another",
          "[actors][router][drain]") {
  auto d = stories_deployment();
  if (d.model.path.empty()) return;
  auto slow = d;
  slow.debug.step_delay_s = 2.0;  // its first step takes 2 s: no token before the grace ends
  served_engine a(slow), b(d);
  net_config cfg;
  caf::actor_system net{cfg};
  auto router = start_router(net, d, {a.address(), b.address()});
  auto expected = std::make_shared<collect_sink>();
  REQUIRE(b.eng->submit(greedy_request(*b.eng, "Once upon a time", 8), expected));
  REQUIRE(expected->wait());
  auto sink = std::make_shared<collect_sink>();
  REQUIRE(router->submit(greedy_request(*b.eng, "Once upon a time", 8), sink).has_value());
  CHECK(router->num_routed(0) == 1);
  a.eng->shutdown(0.0);  // no grace: what it has not started ends with shutting_down
  REQUIRE(sink->wait(30.0));
  CHECK(sink->finish().reason == finish_reason::length);
  CHECK(sink->text() == expected->text());
  CHECK(router->num_retried() == 1);
  CHECK(router->num_routed(1) == 1);
}

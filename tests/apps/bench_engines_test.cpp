// bench serve's per-engine figures (apps/inflight/bench_engines.hpp): each engine's
// counters between two scrapes of a router's /metrics, or of one server's.
#include <catch2/catch.hpp>

#include <string>

#include "apps/inflight/bench_engines.hpp"

using namespace inflight::app;

namespace {

std::string router_page(int hits_a, int queries_a, int queries_b) {
  auto line = [](const std::string& name, const std::string& engine, int v) {
    return "inflight:" + name + "{" + (engine.empty() ? "" : "engine=\"" + engine + "\",") + "model_name=\"m\"} " +
           std::to_string(v) + "\n";
  };
  return line("prefix_cache_queries_total", "", 0) + line("prefix_cache_queries_total", "a:1", queries_a) +
         line("prefix_cache_queries_total", "b:2", queries_b) + line("prefix_cache_hits_total", "", 0) +
         line("prefix_cache_hits_total", "a:1", hits_a) + line("prefix_cache_hits_total", "b:2", 0) +
         "inflight:request_success_total{engine=\"a:1\",model_name=\"m\",finished_reason=\"length\"} " +
         std::to_string(queries_a / 10) + "\n";
}

}  // namespace

TEST_CASE("bench engines: each engine's tokens between two scrapes of a router", "[apps][bench]") {
  const auto work = engine_work_between(router_page(100, 300, 50), router_page(900, 1300, 250));
  REQUIRE(work.size() == 2);
  CHECK(work[0].engine == "a:1");
  CHECK(work[0].num_prompt_tokens == 1000);
  CHECK(work[0].num_cached_tokens == 800);
  CHECK(work[0].num_prefill_tokens() == 200);
  CHECK(work[0].num_requests == 100);
  CHECK(work[1].engine == "b:2");
  CHECK(work[1].num_prompt_tokens == 200);
  CHECK(work[1].num_prefill_tokens() == 200);
}

TEST_CASE("bench engines: one server without a router is one engine", "[apps][bench]") {
  const std::string before = "inflight:prefix_cache_queries_total{model_name=\"m\"} 10\n"
                             "inflight:prefix_cache_hits_total{model_name=\"m\"} 0\n";
  const std::string after = "inflight:prefix_cache_queries_total{model_name=\"m\"} 74\n"
                            "inflight:prefix_cache_hits_total{model_name=\"m\"} 48\n";
  const auto work = engine_work_between(before, after);
  REQUIRE(work.size() == 1);
  CHECK(work[0].engine == "server");
  CHECK(work[0].num_prompt_tokens == 64);
  CHECK(work[0].num_cached_tokens == 48);
}

// A router's /metrics: its own page and each engine's, relabelled and merged family by
// family (core/engine/metrics/prometheus_merge.hpp).
#include <catch2/catch.hpp>

#include <string>

#include "core/engine/metrics/prometheus_merge.hpp"

using namespace inflight;

TEST_CASE("prometheus merge: a label goes first, with or without other labels", "[core][metrics]") {
  CHECK(add_label("a_total 3", "engine", "h:1") == "a_total{engine=\"h:1\"} 3");
  CHECK(add_label("a_total{model_name=\"m\"} 3", "engine", "h:1") == "a_total{engine=\"h:1\",model_name=\"m\"} 3");
  CHECK(add_label("a_total{} 3", "engine", "h:1") == "a_total{engine=\"h:1\"} 3");
  CHECK(add_label("a 1", "engine", "say \"hi\"") == "a{engine=\"say \\\"hi\\\"\"} 1");
}

TEST_CASE("prometheus merge: each family once, samples of every page together", "[core][metrics]") {
  const std::string router =
      "# HELP inflight:num_requests_running Running.\n"
      "# TYPE inflight:num_requests_running gauge\n"
      "inflight:num_requests_running{model_name=\"m\"} 2\n"
      "# HELP inflight:router_engine_up Up.\n"
      "# TYPE inflight:router_engine_up gauge\n"
      "inflight:router_engine_up{engine=\"a:1\"} 1\n";
  const std::string engine =
      "# HELP inflight:num_requests_running Running.\n"
      "# TYPE inflight:num_requests_running gauge\n"
      "inflight:num_requests_running{model_name=\"m\"} 1\n"
      "# HELP inflight:ttft_seconds TTFT.\n"
      "# TYPE inflight:ttft_seconds histogram\n"
      "inflight:ttft_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 4\n"
      "inflight:ttft_seconds_sum{model_name=\"m\"} 0.5\n"
      "inflight:ttft_seconds_count{model_name=\"m\"} 4\n";
  const auto out = merge_metrics_pages({{router, "", ""}, {engine, "engine", "a:1"}, {engine, "engine", "b:2"}});
  const std::string want =
      "# HELP inflight:num_requests_running Running.\n"
      "# TYPE inflight:num_requests_running gauge\n"
      "inflight:num_requests_running{model_name=\"m\"} 2\n"
      "inflight:num_requests_running{engine=\"a:1\",model_name=\"m\"} 1\n"
      "inflight:num_requests_running{engine=\"b:2\",model_name=\"m\"} 1\n"
      "# HELP inflight:router_engine_up Up.\n"
      "# TYPE inflight:router_engine_up gauge\n"
      "inflight:router_engine_up{engine=\"a:1\"} 1\n"
      "# HELP inflight:ttft_seconds TTFT.\n"
      "# TYPE inflight:ttft_seconds histogram\n"
      "inflight:ttft_seconds_bucket{engine=\"a:1\",model_name=\"m\",le=\"+Inf\"} 4\n"
      "inflight:ttft_seconds_sum{engine=\"a:1\",model_name=\"m\"} 0.5\n"
      "inflight:ttft_seconds_count{engine=\"a:1\",model_name=\"m\"} 4\n"
      "inflight:ttft_seconds_bucket{engine=\"b:2\",model_name=\"m\",le=\"+Inf\"} 4\n"
      "inflight:ttft_seconds_sum{engine=\"b:2\",model_name=\"m\"} 0.5\n"
      "inflight:ttft_seconds_count{engine=\"b:2\",model_name=\"m\"} 4\n";
  CHECK(out == want);
}

TEST_CASE("prometheus merge: samples summed by a label's value", "[core][metrics]") {
  const std::string page =
      "# TYPE inflight:prefix_cache_hits_total counter\n"
      "inflight:prefix_cache_hits_total{model_name=\"m\"} 5\n"
      "inflight:prefix_cache_hits_total{engine=\"a:1\",model_name=\"m\"} 96\n"
      "inflight:prefix_cache_hits_total{engine=\"b:2\",model_name=\"m\"} 0\n"
      "inflight:prefix_cache_hits_total_other{engine=\"a:1\"} 7\n"
      "inflight:router_requests_routed_total{engine=\"a:1\"} 3\n";
  const auto hits = sum_by_label(page, "inflight:prefix_cache_hits_total", "engine");
  REQUIRE(hits.size() == 2);
  CHECK(hits.at("a:1") == 96.0);
  CHECK(hits.at("b:2") == 0.0);
  CHECK(sum_by_label(page, "inflight:router_requests_routed_total", "engine").at("a:1") == 3.0);
  CHECK(sum_by_label(page, "inflight:missing", "engine").empty());
}

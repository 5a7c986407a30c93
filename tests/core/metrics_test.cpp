#include <catch2/catch.hpp>

#include "core/metrics/metrics.hpp"

using namespace inflight;

TEST_CASE("histogram buckets are cumulative and count every observation", "[metrics]") {
  histogram h({0.1, 1.0});
  h.observe(0.05);
  h.observe(0.5);
  h.observe(0.5);
  h.observe(7.0);
  std::string out;
  h.render(out, "x", "help", "m=\"a\"");
  CHECK_THAT(out, Catch::Contains("x_bucket{m=\"a\",le=\"0.1\"} 1\n"));
  CHECK_THAT(out, Catch::Contains("x_bucket{m=\"a\",le=\"1\"} 3\n"));
  CHECK_THAT(out, Catch::Contains("x_bucket{m=\"a\",le=\"+Inf\"} 4\n"));
  CHECK_THAT(out, Catch::Contains("x_count{m=\"a\"} 4\n"));
  CHECK(h.sum() == Approx(8.05));
}

TEST_CASE("the exposition carries every metric with the model_name label", "[metrics]") {
  engine_metrics m;
  m.prompt_tokens_total += 12;
  m.generation_tokens_total += 5;
  m.count_finished("stop");
  m.count_finished("length");
  m.count_finished("length");
  engine_gauges g;
  g.num_requests_running = 3;
  g.kv_cache_usage = 0.25;
  g.num_constrained_steps = 7;
  m.grammar_mask_seconds.observe(2e-5);
  const auto text = m.render("tiny\"model", g);
  CHECK_THAT(text, Catch::Contains("inflight:num_requests_running{model_name=\"tiny\\\"model\"} 3\n"));
  CHECK_THAT(text, Catch::Contains("inflight:kv_cache_usage_perc{model_name=\"tiny\\\"model\"} 0.25\n"));
  CHECK_THAT(text, Catch::Contains("inflight:prompt_tokens_total{model_name=\"tiny\\\"model\"} 12\n"));
  CHECK_THAT(text, Catch::Contains("finished_reason=\"length\"} 2\n"));
  CHECK_THAT(text, Catch::Contains("inflight:grammar_constrained_steps_total{model_name=\"tiny\\\"model\"} 7\n"));
  CHECK_THAT(text, Catch::Contains("inflight:grammar_mask_seconds_bucket{model_name=\"tiny\\\"model\",le=\"2.5e-05\"} 1\n"));
  for (const char* name : {"num_requests_waiting", "num_preemptions_total", "generation_tokens_total",
                           "time_to_first_token_seconds_bucket", "inter_token_latency_seconds_count",
                           "e2e_request_latency_seconds_sum", "request_queue_time_seconds_bucket",
                           "iteration_tokens_total_bucket", "policy_decisions_rejected_total",
                           "grammar_mask_seconds_bucket", "grammar_compile_seconds_count",
                           "grammar_constrained_steps_total", "grammar_refused_total"}) {
    CHECK_THAT(text, Catch::Contains(std::string("inflight:") + name + "{model_name="));
  }
}

#include <catch2/catch.hpp>

#include "core/engine/metrics/metrics.hpp"

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
  g.num_shed = 4;
  m.grammar_mask_seconds.observe(2e-5);
  const auto text = m.render("tiny\"model", g);
  CHECK_THAT(text, Catch::Contains("inflight:num_requests_running{model_name=\"tiny\\\"model\"} 3\n"));
  CHECK_THAT(text, Catch::Contains("inflight:kv_cache_usage_perc{model_name=\"tiny\\\"model\"} 0.25\n"));
  CHECK_THAT(text, Catch::Contains("inflight:prompt_tokens_total{model_name=\"tiny\\\"model\"} 12\n"));
  CHECK_THAT(text, Catch::Contains("finished_reason=\"length\"} 2\n"));
  CHECK_THAT(text, Catch::Contains("inflight:grammar_constrained_steps_total{model_name=\"tiny\\\"model\"} 7\n"));
  CHECK_THAT(text, Catch::Contains("inflight:request_shed_total{model_name=\"tiny\\\"model\"} 4\n"));
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

TEST_CASE("histogram counts: mean, bucket-interpolated quantiles, differences", "[metrics]") {
  histogram h({1.0, 2.0, 4.0});
  for (int i = 0; i < 10; ++i) h.observe(0.5);  // bucket (0, 1]
  for (int i = 0; i < 10; ++i) h.observe(1.5);  // bucket (1, 2]
  const auto c = h.counts();
  CHECK(c.count == 20);
  CHECK(c.mean() == Approx(1.0));
  CHECK(c.counts == std::vector<std::uint64_t>{10, 10, 0, 0});
  CHECK(c.quantile(0.25) == Approx(0.5));  // rank 5 of 10 in (0, 1]
  CHECK(c.quantile(0.75) == Approx(1.5));  // rank 5 of 10 in (1, 2]
  CHECK(c.quantile(1.0) == Approx(2.0));
  CHECK(histogram_counts{}.quantile(0.5) == 0.0);
  h.observe(100.0);  // +Inf bucket: the largest bound answers
  CHECK(h.counts().quantile(1.0) == Approx(4.0));

  auto d = difference(h.counts(), c);
  REQUIRE(d.has_value());
  CHECK(d->count == 1);
  CHECK(d->counts == std::vector<std::uint64_t>{0, 0, 0, 1});
  CHECK(d->sum == Approx(100.0));
  CHECK_FALSE(difference(c, h.counts()).has_value());  // counts went down
  histogram other({1.0});
  CHECK_FALSE(difference(other.counts(), c).has_value());  // other buckets
}

TEST_CASE("a histogram parses back from the exposition", "[metrics]") {
  engine_metrics m;
  for (double v : {3e-6, 2e-5, 2e-5, 4e-4, 0.2}) m.grammar_mask_seconds.observe(v);
  const auto text = m.render("tiny", {});
  auto parsed = parse_histogram(text, "inflight:grammar_mask_seconds");
  REQUIRE(parsed.has_value());
  const auto direct = m.grammar_mask_seconds.counts();
  CHECK(parsed->upper_bounds == direct.upper_bounds);
  CHECK(parsed->counts == direct.counts);
  CHECK(parsed->count == 5);
  CHECK(parsed->sum == Approx(direct.sum));
  // Not the other histogram with the same prefix, and a missing one is not_found.
  auto compile = parse_histogram(text, "inflight:grammar_compile_seconds");
  REQUIRE(compile.has_value());
  CHECK(compile->count == 0);
  auto missing = parse_histogram(text, "inflight:no_such_seconds");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code == errc::not_found);
}

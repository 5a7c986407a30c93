#include <catch2/catch.hpp>

#include <random>

#include "core/bench/bench_metrics.hpp"

using namespace inflight::bench;

TEST_CASE("bench metrics: a timeline gives TTFT, ITL, E2EL and TPOT", "[core][bench]") {
  // Sent at 10 s, chunks at 10.5, 10.6, 10.8, 11.1, done at 11.1 with 4 tokens.
  const auto r = record_from_timeline(10.0, {10.5, 10.6, 10.8, 11.1}, 11.1, 4);
  REQUIRE(r.is_success);
  CHECK(r.ttft_s == Approx(0.5));
  CHECK(r.e2el_s == Approx(1.1));
  REQUIRE(r.itl_s.size() == 3);
  CHECK(r.itl_s[0] == Approx(0.1));
  CHECK(r.itl_s[1] == Approx(0.2));
  CHECK(r.itl_s[2] == Approx(0.3));
  CHECK(r.tpot_s() == Approx((1.1 - 0.5) / 3));
  // Two tokens in one chunk: TPOT comes from the token count, not the chunk count.
  const auto merged = record_from_timeline(0.0, {0.2, 0.5}, 0.5, 3);
  CHECK(merged.tpot_s() == Approx(0.15));
  CHECK(record_from_timeline(0.0, {0.2}, 0.2, 1).tpot_s() == 0.0);
  CHECK_FALSE(record_from_timeline(0.0, {}, 0.3, 0).is_success);
}

TEST_CASE("bench metrics: percentiles interpolate between ranks", "[core][bench]") {
  const std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  CHECK(percentile(v, 50) == Approx(5.5));
  CHECK(percentile(v, 90) == Approx(9.1));
  CHECK(percentile(v, 99) == Approx(9.91));
  CHECK(percentile(v, 100) == Approx(10));
  CHECK(percentile({7.0}, 99) == 7.0);
  const auto s = describe({4, 1, 3, 2}, {50, 99});
  CHECK(s.mean == Approx(2.5));
  CHECK(s.median == Approx(2.5));
  CHECK(s.stddev == Approx(std::sqrt(1.25)));
  CHECK(s.max == 4.0);
  REQUIRE(s.percentiles.size() == 2);
  CHECK(s.percentiles[1].second == Approx(3.97));
}

TEST_CASE("bench metrics: percentiles are monotone and bounded on random data", "[core][bench]") {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 100);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> v(1 + rng() % 200);
    for (auto& x : v) x = u(rng);
    std::sort(v.begin(), v.end());
    double prev = v.front();
    for (double p = 0; p <= 100; p += 2.5) {
      const double q = percentile(v, p);
      CHECK(q >= prev);
      CHECK(q <= v.back());
      prev = q;
    }
  }
}

TEST_CASE("bench metrics: summary throughput, goodput and peak concurrency", "[core][bench]") {
  std::vector<request_record> rs;
  // Three requests over a 4 s run: two overlap, one fails.
  auto a = record_from_timeline(0.0, {0.1, 0.2, 0.3}, 0.3, 3);   // ttft 100 ms, tpot 100 ms
  a.prompt_tokens = 10;
  auto b = record_from_timeline(0.25, {0.85, 0.9}, 0.95, 5);     // ttft 600 ms, tpot (700 - 600) / 4 = 25 ms
  b.prompt_tokens = 20;
  b.cached_tokens = 16;
  request_record failed;
  failed.start_s = 3.0;
  failed.e2el_s = 0.1;
  failed.error = "refused";
  rs = {a, b, failed};
  slo objectives;
  objectives.ttft_s = 0.5;
  const auto s = summarize(rs, 4.0, {50, 99}, objectives);
  CHECK(s.num_completed == 2);
  CHECK(s.num_failed == 1);
  CHECK(s.total_input_tokens == 30);
  CHECK(s.total_output_tokens == 8);
  CHECK(s.total_cached_tokens == 16);
  CHECK(s.prefix_cache_hit_rate() == Approx(16.0 / 30.0));
  CHECK(s.request_throughput == Approx(0.5));
  CHECK(s.output_throughput == Approx(2.0));
  CHECK(s.total_token_throughput == Approx(9.5));
  REQUIRE(s.goodput.has_value());
  CHECK(*s.goodput == Approx(0.25));  // only `a` meets TTFT <= 500 ms
  CHECK(s.peak_concurrency == 2);
  CHECK(s.ttft_ms.mean == Approx(350));
  CHECK(s.tpot_ms.mean == Approx(62.5));
  CHECK(s.itl_ms.count == 3);
  CHECK(s.itl_ms.max == Approx(100));
  CHECK(s.e2el_ms.median == Approx(500));
  CHECK_FALSE(summarize(rs, 4.0, {50}, slo{}).goodput.has_value());
}

TEST_CASE("bench metrics: goodput checks every objective that is set", "[core][bench]") {
  const auto r = record_from_timeline(0.0, {0.2, 0.3, 0.4}, 0.4, 3);  // ttft 200, tpot 100, e2el 400 ms
  CHECK(meets(r, *parse_slo("ttft:200")));
  CHECK_FALSE(meets(r, *parse_slo("ttft:199")));
  CHECK(meets(r, *parse_slo("ttft:300 tpot:100 e2el:400")));
  CHECK_FALSE(meets(r, *parse_slo("tpot:99")));
  CHECK_FALSE(meets(r, *parse_slo("ttft:300,e2el:399")));
  CHECK_FALSE(parse_slo("ttft").has_value());
  CHECK_FALSE(parse_slo("ttfb:100").has_value());
  CHECK_FALSE(parse_slo("tpot:-3").has_value());
  CHECK(*parse_percentiles("50,90,99") == std::vector<double>{50, 90, 99});
  CHECK_FALSE(parse_percentiles("0").has_value());
  CHECK_FALSE(parse_percentiles("abc").has_value());
}

TEST_CASE("bench metrics: peak concurrency of back-to-back requests is one", "[core][bench]") {
  std::vector<request_record> rs(5);
  for (int i = 0; i < 5; ++i) {
    rs[i].start_s = i;
    rs[i].e2el_s = 1.0;
  }
  CHECK(peak_concurrency(rs) == 1);
  rs[2].e2el_s = 2.5;  // [2, 4.5) overlaps 3 and 4, but they do not overlap each other
  CHECK(peak_concurrency(rs) == 2);
  rs[3].e2el_s = 1.5;  // [3, 4.5): at t = 4, requests 2, 3 and 4 are in flight
  CHECK(peak_concurrency(rs) == 3);
}

TEST_CASE("bench metrics: failures are counted by status and error, most frequent first", "[core][bench]") {
  auto failed = [](int status, std::string error) {
    request_record r;
    r.http_status = status;
    r.error = std::move(error);
    return r;
  };
  const auto ok = record_from_timeline(0.0, {0.1}, 0.1, 1);
  const std::vector<request_record> rs = {
      failed(0, "connect: Connection refused"), failed(429, "HTTP 429: queue full"), ok,
      failed(400, "HTTP 400: too long"),        failed(429, "HTTP 429: queue full"), failed(400, "HTTP 400: too long"),
      failed(429, "HTTP 429: queue full"),      failed(503, "HTTP 503: draining"),   failed(0, "HTTP 429: queue full")};
  const auto top = top_failures(rs, 3);
  REQUIRE(top.size() == 3);
  CHECK(top[0].http_status == 429);
  CHECK(top[0].error == "HTTP 429: queue full");
  CHECK(top[0].count == 3);
  CHECK(top[1].http_status == 400);
  CHECK(top[1].count == 2);
  // Four groups of one: the one that failed first wins the last place; status 0 with the
  // same text is a group of its own.
  CHECK(top[2].http_status == 0);
  CHECK(top[2].error == "connect: Connection refused");
  CHECK(top[2].count == 1);
  const auto s = summarize(rs, 1.0, {50}, slo{});
  CHECK(s.num_failed == 8);
  REQUIRE(s.top_failures.size() == num_top_failures);
  CHECK(s.top_failures[0].count == 3);
  CHECK(top_failures({ok}, 3).empty());
  CHECK(top_failures(rs, 10).size() == 5);
}

TEST_CASE("bench metrics: every failed request is counted by its outcome", "[core][bench]") {
  auto failed = [](int status, std::string code, std::string error = "x") {
    request_record r;
    r.http_status = status;
    r.error_code = std::move(code);
    r.error = std::move(error);
    return r;
  };
  const auto ok = record_from_timeline(0.0, {0.1, 0.2}, 0.2, 2);
  // inflight's codes, which name the outcome whatever the status
  CHECK(outcome_of(ok) == request_outcome::completed);
  CHECK(outcome_of(failed(429, "queue_full")) == request_outcome::refused);
  CHECK(outcome_of(failed(503, "shutting_down")) == request_outcome::refused);
  CHECK(outcome_of(failed(503, "unavailable")) == request_outcome::refused);
  CHECK(outcome_of(failed(429, "queue_timeout")) == request_outcome::timed_out);
  CHECK(outcome_of(failed(504, "timeout")) == request_outcome::timed_out);
  CHECK(outcome_of(failed(0, "timeout")) == request_outcome::timed_out);  // the client's own --timeout
  CHECK(outcome_of(failed(499, "cancelled")) == request_outcome::cancelled);
  CHECK(outcome_of(failed(400, "invalid_argument")) == request_outcome::failed);
  CHECK(outcome_of(failed(500, "backend_error")) == request_outcome::failed);
  // A shed is a queue_timeout by code: its message tells it apart.
  CHECK(outcome_of(failed(429, "queue_timeout", "shed by the scheduling policy: late")) == request_outcome::shed);
  // A server that names no code: by status.
  CHECK(outcome_of(failed(429, "")) == request_outcome::refused);
  CHECK(outcome_of(failed(503, "")) == request_outcome::refused);
  CHECK(outcome_of(failed(504, "")) == request_outcome::timed_out);
  CHECK(outcome_of(failed(500, "")) == request_outcome::failed);
  CHECK(outcome_of(failed(0, "", "connect: Connection refused")) == request_outcome::failed);

  const std::vector<request_record> rs = {ok,
                                          failed(429, "queue_full"),
                                          failed(429, "queue_full"),
                                          failed(429, "queue_timeout"),
                                          failed(429, "queue_timeout", "shed by the scheduling policy: x"),
                                          failed(499, "cancelled"),
                                          failed(500, "backend_error"),
                                          ok};
  const auto s = summarize(rs, 2.0, {50}, slo{});
  CHECK(s.num_completed == 2);
  CHECK(s.num_failed == 6);
  CHECK(s.num_refused == 2);
  CHECK(s.num_timed_out == 1);
  CHECK(s.num_shed == 1);
  CHECK(s.num_cancelled == 1);
  CHECK(s.num_other_failed() == 1);
  CHECK(s.num_lost() == 5);  // a cancellation the client asked for is not lost
  // Throughput counts what completed.
  CHECK(s.request_throughput == Approx(1.0));
  CHECK(s.output_throughput == Approx(2.0));
  CHECK(to_string(request_outcome::timed_out) == std::string("timed out"));
}

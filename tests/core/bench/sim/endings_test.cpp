// How a simulated request ends and leaves: on its own below its limit (EOS, a stop
// string), by its client's cancel, refused at the admission gate; and scoring requests
// (rerank), which end after their prompt.
#include <catch2/catch.hpp>

#include <random>

#include "core/bench/rerank_workload.hpp"
#include "tests/core/bench/sim/sim_helpers.hpp"

using namespace inflight;
using namespace inflight::test;

TEST_CASE("simulate: an output ends on its own below its limit, by EOS at once or by a stop string a step later",
          "[core][sim]") {
  const sim::constant_cost_model cost(0.25);
  auto p = sim_prompt(10, 5);
  SECTION("at its limit (max_tokens = output_len)") {
    const auto r = run_sim({p}, "fcfs", sim_config(512, 4, 64), cost);
    CHECK(r.records[0].finish_reason == "length");
    CHECK(r.records[0].output_tokens == 5);
    CHECK(r.num_steps == 5);
    CHECK(r.duration_s == 1.25);
  }
  SECTION("EOS below a limit of 100") {
    p.max_tokens = 100;
    const auto r = run_sim({p}, "fcfs", sim_config(512, 4, 64), cost);
    REQUIRE(r.records[0].is_success);
    CHECK(r.records[0].finish_reason == "stop");
    CHECK(r.records[0].output_tokens == 5);
    CHECK(r.num_steps == 5);
    CHECK(r.records[0].e2el_s == 1.25);
  }
  SECTION("a stop string below a limit of 100: the engine runs the request one more step") {
    p.max_tokens = 100;
    p.ends_by_stop_string = true;
    const auto r = run_sim({p}, "fcfs", sim_config(512, 4, 64), cost);
    REQUIRE(r.records[0].is_success);
    CHECK(r.records[0].finish_reason == "stop");
    CHECK(r.records[0].output_tokens == 5);  // the extra step's token is dropped
    CHECK(r.num_steps == 6);
    CHECK(r.duration_s == 1.5);
    CHECK(r.num_free_blocks_at_end == 64);
    CHECK(r.num_kv_sequences_at_end == 0);
  }
}

TEST_CASE("simulate: a policy that reserves to the limit sees max_tokens, not the output it will make",
          "[core][sim]") {
  // orca reserves every block a request can need at its limit. Two prompts of 10 tokens
  // with 5-token outputs need 1 block each; at a limit of 100 they need 7 each, and a
  // pool of 10 holds one at a time.
  const sim::constant_cost_model cost(0.25);
  auto a = sim_prompt(10, 5), b = sim_prompt(10, 5, 0.0, 50);
  const auto exact = run_sim({a, b}, "orca", sim_config(512, 4, 10), cost);
  CHECK(exact.records[1].ttft_s == 0.25);
  a.max_tokens = b.max_tokens = 100;
  const auto limited = run_sim({a, b}, "orca", sim_config(512, 4, 10), cost);
  REQUIRE(limited.summary.num_completed == 2);
  CHECK(limited.records[0].ttft_s == 0.25);
  CHECK(limited.records[1].ttft_s == 1.5);  // after the first's 5 steps, in the sixth
  CHECK(limited.records[1].output_tokens == 5);
}

TEST_CASE("simulate: a client's cancel ends its request at its time and gives its blocks back", "[core][sim]") {
  const sim::constant_cost_model cost(0.25);
  auto kept = sim_prompt(10, 20), cancelled = sim_prompt(10, 20, 0.0, 50), late = sim_prompt(10, 20, 0.0, 90);
  SECTION("between steps") {
    cancelled.cancel_after_s = 1.0;
    const auto r = run_sim({kept, cancelled}, "fcfs", sim_config(512, 4, 64), cost);
    CHECK(r.records[0].is_success);
    CHECK(!r.records[1].is_success);
    CHECK(r.records[1].finish_reason == "cancelled");
    CHECK(r.records[1].e2el_s == 1.0);
    CHECK(r.records[1].output_tokens == 4);
    CHECK(r.num_cancelled == 1);
    CHECK(r.num_free_blocks_at_end == 64);
  }
  SECTION("during a step: at the step's end") {
    cancelled.cancel_after_s = 0.9;
    const auto r = run_sim({kept, cancelled}, "fcfs", sim_config(512, 4, 64), cost);
    CHECK(r.records[1].finish_reason == "cancelled");
    CHECK(r.records[1].e2el_s == 1.0);
    CHECK(r.num_cancelled == 1);
  }
  SECTION("while it waits, and after it finished") {
    // One sequence at a time: the second waits 20 steps (5 s) and is cancelled at 2 s;
    // the third finished long before its cancel at 100 s.
    cancelled.cancel_after_s = 2.0;
    late.cancel_after_s = 100.0;
    const auto r = run_sim({kept, cancelled, late}, "fcfs", sim_config(512, 1, 64), cost);
    CHECK(r.records[1].finish_reason == "cancelled");
    CHECK(r.records[1].output_tokens == 0);
    CHECK(r.first_scheduled_s[1] < 0);
    CHECK(r.records[2].is_success);
    CHECK(r.records[2].ttft_s == Approx(5.25));  // started when the first finished
    CHECK(r.num_cancelled == 1);
    CHECK(r.duration_s == 10.0);  // the virtual clock did not run on to the late cancel
  }
}

TEST_CASE("simulate: a request past its deadline ends with the clients' finish name (abort)", "[core][sim]") {
  // One sequence at a time at 0.25 s a step: the first is done in about 1.25 s; the
  // second starts then and would need 5 s more, past its 2 s deadline.
  const sim::constant_cost_model cost(0.25);
  auto c = sim_config(512, 1, 64);
  c.request_timeout_s = 2.0;
  const auto r = run_sim({sim_prompt(10, 4), sim_prompt(10, 20, 0.0, 50)}, "fcfs", c, cost);
  CHECK(r.records[0].is_success);
  CHECK(!r.records[1].is_success);
  CHECK(r.records[1].finish_reason == finish_name(finish_reason::aborted));
  CHECK(r.records[1].finish_reason == "abort");  // what /v1/completions and the step feed say
  // As a client would see it: 504 timeout, counted as timed out.
  CHECK(r.records[1].http_status == 504);
  CHECK(r.records[1].error_code == "timeout");
  CHECK(r.summary.num_timed_out == 1);
}

TEST_CASE("simulate: a request past the queue time limit is a 429 queue_timeout, counted as timed out",
          "[core][sim]") {
  // One sequence at a time at 0.25 s a step: the first runs about 2 s, so the second
  // waits past a 1 s queue limit; the third arrives at 1.2 s and starts in time.
  const sim::constant_cost_model cost(0.25);
  auto c = sim_config(512, 1, 64);
  c.max_queue_time_s = 1.0;
  const auto r = run_sim({sim_prompt(10, 8), sim_prompt(10, 4), sim_prompt(10, 2, 1.2)}, "fcfs", c, cost);
  CHECK(r.records[0].is_success);
  REQUIRE(!r.records[1].is_success);
  CHECK(r.records[1].http_status == 429);
  CHECK(r.records[1].error_code == "queue_timeout");
  CHECK(bench::outcome_of(r.records[1]) == bench::request_outcome::timed_out);
  CHECK(r.records[2].is_success);
  CHECK(r.summary.num_timed_out == 1);
  CHECK(r.summary.num_refused == 0);
}

TEST_CASE("simulate: the admission gate refuses past its bounds with 429 and lets requests out as they start",
          "[core][sim]") {
  const sim::constant_cost_model cost(0.25);
  std::vector<bench::bench_prompt> prompts;
  for (int i = 0; i < 5; ++i) prompts.push_back(sim_prompt(10, 2, 0.0, 3 + 20 * i));
  prompts.push_back(sim_prompt(10, 2, 5.0));  // after the first ones started
  auto c = sim_config(512, 4, 64);
  c.admission = admission_gate::limits{2, 1000};
  const auto r = run_sim(prompts, "fcfs", c, cost);
  CHECK(r.records[0].is_success);
  CHECK(r.records[1].is_success);
  for (int i = 2; i < 5; ++i) {
    INFO("request " << i);
    CHECK(!r.records[std::size_t(i)].is_success);
    CHECK(r.records[std::size_t(i)].http_status == 429);
    CHECK(r.records[std::size_t(i)].error_code == "queue_full");
  }
  CHECK(r.records[5].is_success);
  CHECK(r.num_rejected == 3);
  CHECK(r.summary.num_refused == 3);
  SECTION("a prompt longer than the token bound is a bad request (400), not a full queue") {
    c.admission = admission_gate::limits{100, 15};
    const auto one = run_sim({sim_prompt(20, 2), sim_prompt(10, 2)}, "fcfs", c, cost);
    CHECK(one.records[0].http_status == 400);
    CHECK(one.records[1].is_success);
  }
  SECTION("without a gate every request runs") {
    c.admission.reset();
    CHECK(run_sim(prompts, "fcfs", c, cost).summary.num_completed == 6);
  }
}

TEST_CASE("simulate: scoring requests end after their prompt, no token, and share their call's prefix",
          "[core][sim][rerank]") {
  const sim::constant_cost_model cost(0.01);
  std::mt19937_64 rng(5);
  auto prompts = bench::rerank_prompts(bench::workload_size::small, 2, {20, 0, 8}, 1000, rng);
  REQUIRE(prompts.has_value());
  auto c = sim_config(512, 64, 400);
  c.scheduler.enable_prefix_caching = true;
  const auto r = run_sim(*prompts, "fcfs", c, cost);
  REQUIRE(r.summary.num_completed == 200);
  for (const auto& rec : r.records) {
    CHECK(rec.output_tokens == 0);
    CHECK(rec.finish_reason == "stop");
  }
  // Each call's 36 shared tokens: 2 full blocks of 16 from the cache for most documents
  // (and the template head's one block for the second call's first ones).
  CHECK(r.counters.num_prefix_cache_hits >= 32 * 190);
  CHECK(r.num_free_blocks_at_end == 400);
  // A prompt of 108 tokens is at most 2 steps' worth here: no document waits for tokens.
  CHECK(r.num_steps < 60);
}

TEST_CASE("simulate: closed-loop clients send the next call when one finishes, and count from then",
          "[core][sim]") {
  const sim::constant_cost_model cost(0.25);
  std::vector<bench::bench_prompt> prompts;
  for (int i = 0; i < 4; ++i) prompts.push_back(sim_prompt(10, 2, 0.0, 3 + 20 * i));
  auto c = sim_config(512, 8, 64);
  SECTION("open arrivals: one batch") {
    const auto r = run_sim(prompts, "fcfs", c, cost);
    CHECK(r.num_steps == 2);
    CHECK(r.duration_s == 0.5);
  }
  SECTION("one client: one request after another, each timed from its send") {
    c.max_concurrency = 1;
    const auto r = run_sim(prompts, "fcfs", c, cost);
    CHECK(r.num_steps == 8);
    CHECK(r.duration_s == 2.0);
    for (std::size_t i = 0; i < 4; ++i) {
      INFO("request " << i);
      CHECK(r.records[i].start_s == 0.5 * double(i));
      CHECK(r.records[i].ttft_s == 0.25);
      CHECK(r.records[i].e2el_s == 0.5);
    }
  }
  SECTION("two clients, and a cancel counted from the send") {
    c.max_concurrency = 2;
    prompts[3].cancel_after_s = 0.25;  // sent at 0.5 with the third: cancelled after its first token
    const auto r = run_sim(prompts, "fcfs", c, cost);
    CHECK(r.records[2].start_s == 0.5);
    CHECK(r.records[3].start_s == 0.5);
    CHECK(r.records[3].finish_reason == "cancelled");
    CHECK(r.records[3].e2el_s == 0.25);
    CHECK(r.num_cancelled == 1);
  }
  SECTION("a later arrival is sent at its own time when a slot is free") {
    c.max_concurrency = 1;
    prompts[1].arrival_s = 3.0;
    const auto r = run_sim({prompts[0], prompts[1]}, "fcfs", c, cost);
    CHECK(r.records[1].start_s == 3.0);
    CHECK(r.duration_s == 3.5);
  }
}

TEST_CASE("simulate: a closed-loop client sends a rerank call's documents together, the next call after it",
          "[core][sim][rerank]") {
  const sim::constant_cost_model cost(0.01);
  std::mt19937_64 rng(6);
  auto prompts = bench::rerank_prompts(bench::workload_size::small, 3, {20, 0, 8}, 1000, rng);
  REQUIRE(prompts.has_value());
  auto c = sim_config(512, 64, 400);
  c.max_concurrency = 1;
  const auto r = run_sim(*prompts, "fcfs", c, cost);
  REQUIRE(r.summary.num_completed == 300);
  for (int call = 0; call < 3; ++call) {
    double first = INFINITY, last = 0.0;
    for (int d = 0; d < 100; ++d) {
      const auto& rec = r.records[std::size_t(call * 100 + d)];
      first = std::min(first, rec.start_s);
      last = std::max(last, rec.start_s + rec.e2el_s);
      if (d > 0) CHECK(rec.start_s == r.records[std::size_t(call * 100)].start_s);  // together
    }
    if (call + 1 < 3) CHECK(r.records[std::size_t((call + 1) * 100)].start_s == Approx(last));  // next after it
  }
  CHECK(r.records[0].start_s == 0.0);
}

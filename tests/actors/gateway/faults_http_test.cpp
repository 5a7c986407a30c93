// Faults end to end on a loopback server: a failed backend step is a 500-class error
// for its request only; /health says what happened; clients that go away while
// waiting or during prefill free everything (HTTP and WebSocket).
#include "actors/gateway/sse.hpp"
#include "tests/actors/gateway/load_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

TEST_CASE("faults http: a failed step is a 500 for its request, the server serves on", "[gateway][faults]") {
  if (!has_stories()) return;
  auto d = stories_deployment("fcfs", 256, 256, 1);
  d.debug.fail_step = 2;
  d.engine.unhealthy_after_failed_steps = 2;
  served s(d);
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}, {"ignore_eos", true}};
  auto failed = post_json(s.port, "/v1/completions", body);
  CHECK(failed.status == 500);
  const auto e = failed.body_json()["error"];
  CHECK(e["type"] == "internal_server_error");
  CHECK(e["code"] == "backend_error");
  CHECK_THAT(e["message"].get<std::string>(), Catch::Contains("injected failure of backend step 2"));
  // One failed step: still healthy, and /health says what happened.
  auto health = get(s.port, "/health");
  CHECK(health.status == 200);
  CHECK(health.body_json()["status"] == "degraded");
  CHECK(health.body_json()["consecutive_failed_steps"] == 1);
  CHECK(metric(s.port, "engine_step_failures_total") == 1);
  auto ok = post_json(s.port, "/v1/completions", body);
  CHECK(ok.status == 200);
  CHECK(ok.body_json()["choices"][0]["finish_reason"] == "length");
  health = get(s.port, "/health");
  CHECK(health.status == 200);
  CHECK(health.body_json()["status"] == "ok");
  CHECK(health.body_json()["failed_steps"] == 1);
  CHECK(engine_idle(s.port));
}

TEST_CASE("faults http: a failed step mid-stream ends the stream with an error event", "[gateway][faults]") {
  if (!has_stories()) return;
  auto d = stories_deployment("fcfs", 256, 256, 1);
  d.debug.fail_step = 3;
  d.debug.num_failed_steps = 2;
  d.engine.unhealthy_after_failed_steps = 2;
  served s(d);
  auto streamed = post_json(s.port, "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 6},
                                                        {"temperature", 0}, {"ignore_eos", true}, {"stream", true}});
  CHECK(streamed.status == 200);
  auto parts = gateway::try_split_sse(streamed.body);
  REQUIRE(parts.has_value());
  REQUIRE(parts->size() >= 2);
  CHECK(parts->back() == "[DONE]");
  CHECK(json::parse((*parts)[parts->size() - 2])["error"]["code"] == "backend_error");
  // Step 4 fails too (a second request): two in a row is unhealthy (503) until a step succeeds.
  CHECK(post_json(s.port, "/v1/completions", {{"prompt", "Tom"}, {"max_tokens", 2}}).status == 500);
  auto health = get(s.port, "/health");
  CHECK(health.status == 503);
  CHECK(health.body_json()["error"]["code"] == "unavailable");
  CHECK(health.headers.count("Retry-After") == 1);  // a load balancer may try it again then
  CHECK_THAT(health.body_json()["error"]["message"].get<std::string>(), Catch::Contains("injected failure"));
  CHECK(post_json(s.port, "/v1/completions", {{"prompt", "Tom"}, {"max_tokens", 2}}).status == 200);
  CHECK(get(s.port, "/health").status == 200);
}

TEST_CASE("faults http: a client that leaves while waiting frees its place at once", "[gateway][faults][cancel]") {
  if (!has_stories()) return;
  served s(one_at_a_time());
  blocker running(*s.eng);  // nothing behind it starts while the test runs
  for (bool is_streaming : {false, true}) {
    raw_client c(s.port, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 4}, {"stream", is_streaming}});
    REQUIRE(wait_until([&] { return s.eng->snapshot().num_waiting_to_start == 1; }));
    c.close();
    // Leaves the queue without waiting for its turn (which would never come here).
    CHECK(wait_until([&] { return s.eng->snapshot().num_waiting_to_start == 0; }));
    CHECK(wait_until([&] { return s.eng->snapshot().gauges.num_requests_waiting == 0; }));
  }
  ws_client w(s.port);
  w.send({{"type", "generate"}, {"id", 1}, {"prompt", "Once"}, {"max_tokens", 4}});
  REQUIRE(wait_until([&] { return s.eng->snapshot().num_waiting_to_start == 1; }));
  beast::error_code ignored;
  w.ws.next_layer().socket().close(ignored);
  CHECK(wait_until([&] { return s.eng->snapshot().num_waiting_to_start == 0; }));
  CHECK(running.sink->num_finishes() == 0);  // the blocker was never disturbed
}

TEST_CASE("faults http: a client that leaves during prefill frees its blocks before the prefill ends",
          "[gateway][faults][cancel]") {
  if (!has_stories()) return;
  // Chunks of 8 tokens, 0.2 s a step: a prompt of ~100 tokens needs over two seconds
  // of prefill, and its first token only comes after all of it.
  auto d = stories_deployment("fcfs", 8, 256, 4);
  d.debug.step_delay_s = 0.2;
  served s(d);
  std::string prompt;
  for (int i = 0; i < 8; ++i) prompt += "Once upon a time there was a girl. ";
  const auto num_prompt = s.eng->model().tok->encode(prompt, true).size();
  REQUIRE(num_prompt > 80);
  for (int round = 0; round < 2; ++round) {
    const double generated = metric(s.port, "generation_tokens_total");
    const auto start_steps = s.eng->snapshot().num_steps;
    std::optional<raw_client> http;
    std::optional<ws_client> ws;
    if (round == 0) {
      http.emplace(s.port, "/v1/completions", json{{"prompt", prompt}, {"max_tokens", 4}, {"stream", true}});
    } else {
      ws.emplace(s.port);
      ws->send({{"type", "generate"}, {"id", 1}, {"prompt", prompt}, {"max_tokens", 4}});
    }
    // Prefill has begun: blocks are held, no token yet.
    REQUIRE(wait_until([&] { return s.eng->snapshot().gauges.kv_cache_usage > 0; }));
    const auto snap = s.eng->snapshot();
    CHECK(snap.num_steps - start_steps < num_prompt / 8);
    beast::error_code ignored;
    if (http) http->close();
    if (ws) ws->ws.next_layer().socket().close(ignored);
    CHECK(engine_idle(s.port));
    // Freed before its prefill could finish: no token was ever sampled for it.
    CHECK(metric(s.port, "generation_tokens_total") == generated);
    const auto after = s.eng->snapshot();
    CHECK(after.num_free_blocks == after.num_blocks);
  }
}

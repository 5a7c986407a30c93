// Overload end to end on a loopback server: the waiting queue is bounded in requests,
// prompt tokens and time; load refusals are 429 + Retry-After (WebSocket: an error
// message for that id, the socket stays open); nothing is left behind.
#include "actors/gateway/sse.hpp"
#include "tests/actors/gateway/load_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

void check_load_refusal(const http_answer& a, const std::string& code, const std::string& setting) {
  CHECK(a.status == 429);
  CHECK(a.headers.count("Retry-After") == 1);
  if (a.headers.count("Retry-After")) CHECK(a.headers.at("Retry-After") == "1");
  const auto e = a.body_json()["error"];
  CHECK(e["type"] == "rate_limit_error");
  CHECK(e["code"] == code);
  CHECK_THAT(e["message"].get<std::string>(), Catch::Contains(setting));
}

json short_request(const std::string& prompt = "Once", int max_tokens = 2) {
  return {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

}  // namespace

TEST_CASE("overload: a full queue (in requests) is a 429 with Retry-After", "[gateway][overload]") {
  if (!has_stories()) return;
  auto d = one_at_a_time();
  d.server.max_waiting_requests = 1;
  served s(d);
  {
    blocker running(*s.eng);
    auto waiting_sink = std::make_shared<collect_sink>();
    auto waiting = s.eng->submit(greedy_request(*s.eng, "Tom", 2), waiting_sink);
    REQUIRE(waiting.has_value());
    const double refused = metric(s.port, "request_refused_total");
    check_load_refusal(post_json(s.port, "/v1/completions", short_request()), "queue_full", "server.max_waiting_requests");
    auto streamed = post_json(s.port, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}, {"stream", true}});
    check_load_refusal(streamed, "queue_full", "server.max_waiting_requests");  // before any SSE byte
    auto chat = post_json(s.port, "/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}});
    check_load_refusal(chat, "queue_full", "server.max_waiting_requests");
    CHECK(metric(s.port, "request_refused_total") == refused + 3);
    CHECK(s.eng->snapshot().num_waiting_to_start == 1);  // refusals leave no count behind
    s.eng->cancel(*waiting);
    REQUIRE(waiting_sink->wait());
  }
  CHECK(engine_idle(s.port));
  CHECK(s.eng->snapshot().num_waiting_to_start == 0);
  // Room again: the next request is served.
  CHECK(post_json(s.port, "/v1/completions", short_request()).status == 200);
  CHECK(get(s.port, "/health").status == 200);
}

TEST_CASE("overload: the queue is bounded in prompt tokens", "[gateway][overload]") {
  if (!has_stories()) return;
  auto d = one_at_a_time();
  const std::string prompt = "Once upon a time there was a little girl named Lily. She liked to play";
  const std::int64_t num_long = std::int64_t(load_model(d.model).value().tok->encode(prompt, true).size());
  d.server.max_waiting_tokens = 2 * num_long - 1;  // one such prompt fits, two do not
  served s(d);
  blocker running(*s.eng);
  auto waiting_sink = std::make_shared<collect_sink>();
  auto req = greedy_request(*s.eng, prompt, 2);
  auto waiting = s.eng->submit(req, waiting_sink);
  REQUIRE(waiting.has_value());
  CHECK(s.eng->snapshot().num_waiting_tokens == num_long);
  // Another prompt of the same size would pass the bound.
  check_load_refusal(post_json(s.port, "/v1/completions", short_request(prompt)), "queue_full",
                     "server.max_waiting_tokens");
  // A prompt no queue could ever hold is the client's error.
  const std::string huge = prompt + " " + prompt + " " + prompt;
  REQUIRE(std::int64_t(s.eng->model().tok->encode(huge, true).size()) > d.server.max_waiting_tokens);
  auto too_big = post_json(s.port, "/v1/completions", short_request(huge));
  CHECK(too_big.status == 400);
  CHECK_THAT(too_big.body_json()["error"]["message"].get<std::string>(), Catch::Contains("server.max_waiting_tokens"));
  // A short one still fits.
  auto small_sink = std::make_shared<collect_sink>();
  auto small = s.eng->submit(greedy_request(*s.eng, "Tom", 1), small_sink);
  CHECK(small.has_value());
  s.eng->cancel(*waiting);
  if (small) s.eng->cancel(*small);
  waiting_sink->wait();
  small_sink->wait();
}

TEST_CASE("overload: a request still waiting after max_queue_time_s fails with 429 queue_timeout",
          "[gateway][overload]") {
  if (!has_stories()) return;
  auto d = one_at_a_time();
  d.server.max_queue_time_s = 0.3;
  served s(d);
  blocker running(*s.eng);  // runs for the whole test: nothing behind it can start
  const double errors = metric(s.port, "request_success_total{model_name=\"stories260K\",finished_reason=\"error\"}");
  auto plain = post_json(s.port, "/v1/completions", short_request());
  check_load_refusal(plain, "queue_timeout", "server.max_queue_time_s");
  // A stream has sent its 200 header already: the timeout arrives as its error event.
  auto streamed = post_json(s.port, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}, {"stream", true}});
  CHECK(streamed.status == 200);
  auto parts = gateway::try_split_sse(streamed.body);
  REQUIRE(parts.has_value());
  REQUIRE(parts->size() == 2);
  CHECK(json::parse(parts->front())["error"]["code"] == "queue_timeout");
  CHECK(parts->back() == "[DONE]");
  // WebSocket: an error message for that id; the socket stays open.
  ws_client c(s.port);
  c.send({{"type", "generate"}, {"id", 7}, {"prompt", "Once"}, {"max_tokens", 2}});
  const auto msg = c.receive();
  CHECK(msg["type"] == "error");
  CHECK(msg["id"] == 7);
  CHECK(msg["error"]["code"] == "queue_timeout");
  CHECK(msg["retry_after_s"] == 1);
  CHECK(metric(s.port, "request_success_total{model_name=\"stories260K\",finished_reason=\"error\"}") == errors + 3);
  // Nothing waits, nothing but the blocker holds blocks, the blocker never stopped.
  CHECK(s.eng->snapshot().num_waiting_to_start == 0);
  CHECK(metric(s.port, "num_requests_waiting") == 0);
  CHECK(running.sink->num_finishes() == 0);
  c.send({{"type", "cancel"}, {"id", 7}});  // the socket still answers
  c.send({{"type", "nonsense"}, {"id", 8}});
  CHECK(c.receive()["error"]["code"] == "unknown_type");
}

TEST_CASE("overload: WebSocket gets a queue_full error for that id and keeps the socket", "[gateway][overload][ws]") {
  if (!has_stories()) return;
  auto d = one_at_a_time();
  d.server.max_waiting_requests = 1;
  served s(d);
  ws_client c(s.port);
  {
    blocker running(*s.eng);
    auto waiting_sink = std::make_shared<collect_sink>();
    auto waiting = s.eng->submit(greedy_request(*s.eng, "Tom", 2), waiting_sink);
    REQUIRE(waiting.has_value());
    c.send({{"type", "generate"}, {"id", "x"}, {"prompt", "Once"}, {"max_tokens", 2}});
    const auto msg = c.receive();
    CHECK(msg["type"] == "error");
    CHECK(msg["id"] == "x");
    CHECK(msg["error"]["code"] == "queue_full");
    CHECK(msg["error"]["type"] == "rate_limit_error");
    CHECK(msg["retry_after_s"] == 1);
    s.eng->cancel(*waiting);
    REQUIRE(waiting_sink->wait());
  }
  // The same id again, on the same socket, once there is room.
  c.send({{"type", "generate"}, {"id", "x"}, {"prompt", "Once"}, {"max_tokens", 2}, {"temperature", 0}});
  json last;
  do last = c.receive(); while (last["type"] == "token");
  CHECK(last["type"] == "done");
  CHECK(last["id"] == "x");
}

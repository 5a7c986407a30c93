// The WebSocket protocol at /v1/ws against a real server: multiplexing, cancels,
// bad frames, disconnects.
#include <random>
#include <set>

#include "tests/actors/gateway/gateway_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

const std::vector<std::string> ws_prompts = {"Once upon a time", "The cat sat", "Lily and Ben", "One day", "Tom"};

std::string engine_text(engine& eng, const std::string& prompt, int max_tokens) {
  auto r = greedy_request(eng, prompt, max_tokens);
  r.params.ignore_eos = true;
  auto sink = std::make_shared<collect_sink>();
  REQUIRE(eng.submit(r, sink).has_value());
  REQUIRE(sink->wait());
  return sink->text();
}

struct id_result {
  std::string text;
  int num_tokens = 0;
  int next_index = 0;
  int num_terminal = 0;
  json terminal;
};

}  // namespace

TEST_CASE("gateway ws: one request streams the engine's greedy text", "[gateway][ws]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  const auto expected = engine_text(*s.eng, "Once upon a time", 30);
  ws_client c(s.port);
  c.send({{"type", "generate"}, {"id", "a"}, {"prompt", "Once upon a time"}, {"max_tokens", 30},
          {"temperature", 0}, {"ignore_eos", true}});
  std::string text;
  int num_tokens = 0;
  for (;;) {
    const auto msg = c.receive();
    REQUIRE(msg["id"] == "a");
    if (msg["type"] == "token") {
      CHECK(msg["index"] == num_tokens);
      num_tokens += int(msg["token_ids"].size());
      text += msg["text"].get<std::string>();
      continue;
    }
    REQUIRE(msg["type"] == "done");
    CHECK(msg["finish_reason"] == "length");
    CHECK(msg["usage"] == json{{"prompt_tokens", 5}, {"completion_tokens", 30}, {"total_tokens", 35},
                               {"prompt_tokens_details", {{"cached_tokens", 0}}}});
    for (const char* key : {"queue_ms", "ttft_ms", "tpot_ms", "e2e_ms"}) CHECK(msg["timings"][key].get<double>() >= 0);
    CHECK(msg["timings"]["e2e_ms"].get<double>() >= msg["timings"]["ttft_ms"].get<double>());
    break;
  }
  CHECK(num_tokens == 30);
  CHECK(text == expected);
}

TEST_CASE("gateway ws: 50 concurrent requests on one socket with interleaved cancels", "[gateway][ws][cancel]") {
  if (!has_stories()) return;
  served s(stories_deployment("splitfuse", 256, 1024, 64));
  std::mt19937 rng(1234);
  std::map<int, int> max_tokens;
  std::set<int> cancelled;
  ws_client c(s.port);
  for (int id = 0; id < 50; ++id) {
    max_tokens[id] = std::uniform_int_distribution<int>(5, 60)(rng);
    const bool is_cancelled = id % 3 == 1;
    if (is_cancelled) max_tokens[id] = 400;  // long enough that the cancel arrives first
    c.send({{"type", "generate"}, {"id", id}, {"prompt", ws_prompts[id % ws_prompts.size()]},
            {"max_tokens", max_tokens[id]}, {"temperature", 0}, {"ignore_eos", true}});
    if (is_cancelled) cancelled.insert(id);
    if (id % 5 == 4) {
      for (int k : cancelled) c.send({{"type", "cancel"}, {"id", k}});
    }
  }
  for (int k : cancelled) c.send({{"type", "cancel"}, {"id", k}});
  std::map<int, id_result> results;
  int num_terminal = 0;
  while (num_terminal < 50) {
    const auto msg = c.receive();
    REQUIRE(msg["id"].is_number_integer());
    auto& r = results[msg["id"].get<int>()];
    if (msg["type"] == "token") {
      CHECK(r.num_terminal == 0);
      CHECK(msg["index"] == r.next_index);
      r.next_index += int(msg["token_ids"].size());
      r.num_tokens += int(msg["token_ids"].size());
      r.text += msg["text"].get<std::string>();
    } else {
      ++r.num_terminal;
      r.terminal = msg;
      ++num_terminal;
    }
  }
  REQUIRE(results.size() == 50);
  for (auto& [id, r] : results) {
    INFO("id " << id);
    CHECK(r.num_terminal == 1);
    REQUIRE(r.terminal["type"] == "done");
    if (cancelled.contains(id)) {
      CHECK(r.terminal["finish_reason"] == "cancelled");
      CHECK(r.terminal["usage"]["completion_tokens"].get<int>() < max_tokens[id]);
    } else {
      CHECK(r.terminal["finish_reason"] == "length");
      CHECK(r.num_tokens == max_tokens[id]);
      CHECK(r.terminal["usage"]["completion_tokens"] == max_tokens[id]);
    }
  }
  // Greedy texts under batching equal the engine's text for the same prompt alone.
  for (int id : {0, 2, 3, 5, 48}) {
    CHECK(results[id].text == engine_text(*s.eng, ws_prompts[id % ws_prompts.size()], max_tokens[id]));
  }
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway ws: bad frames get error messages and the socket stays up", "[gateway][ws][errors]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  ws_client c(s.port);
  const auto expect_error = [&](const std::string& code, const json& id) {
    const auto msg = c.receive();
    CHECK(msg["type"] == "error");
    CHECK(msg["id"] == id);
    CHECK(msg["error"]["code"] == code);
    CHECK_FALSE(msg["error"]["message"].get<std::string>().empty());
  };
  c.send_text("this is not json");
  expect_error("invalid_json", nullptr);
  c.send_binary(std::string("\x00\x01\x02", 3));
  expect_error("binary_frame", nullptr);
  c.send({{"type", "generate"}, {"prompt", "Once"}});
  expect_error("missing_id", nullptr);
  c.send({{"type", "generate"}, {"id", {1, 2}}, {"prompt", "Once"}});
  expect_error("missing_id", {1, 2});
  c.send({{"type", "explode"}, {"id", "x"}});
  expect_error("unknown_type", "x");
  c.send({{"type", "generate"}, {"id", "bad"}, {"prompt", "Once"}, {"max_tokens", -3}});
  const auto bad = c.receive();
  CHECK(bad["type"] == "error");
  CHECK(bad["error"]["param"] == "max_tokens");
  c.send({{"type", "generate"}, {"id", "long"}, {"prompt", "Once"}, {"max_tokens", 300}, {"ignore_eos", true}});
  c.send({{"type", "generate"}, {"id", "long"}, {"prompt", "Once"}, {"max_tokens", 3}});
  c.send({{"type", "cancel"}, {"id", "never-sent"}});  // ignored: it may just have finished
  bool has_duplicate_error = false;
  for (;;) {
    const auto msg = c.receive();
    if (msg["type"] == "error") {
      CHECK(msg["id"] == "long");
      CHECK(msg["error"]["code"] == "duplicate_id");
      has_duplicate_error = true;
      c.send({{"type", "cancel"}, {"id", "long"}});
    }
    if (msg["type"] == "done") {
      CHECK(msg["finish_reason"] == "cancelled");
      break;
    }
  }
  CHECK(has_duplicate_error);
  // The same socket still serves.
  c.send({{"type", "generate"}, {"id", "ok"}, {"prompt", "Once"}, {"max_tokens", 4}, {"ignore_eos", true}});
  json msg;
  do msg = c.receive();
  while (msg["type"] == "token");
  CHECK(msg["type"] == "done");
  CHECK(msg["usage"]["completion_tokens"] == 4);
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway ws: closing the socket cancels its requests", "[gateway][ws][cancel]") {
  if (!has_stories()) return;
  auto d = stories_deployment();
  d.debug.step_delay_s = 0.01;  // 480 tokens take 4.8 s at least: still running when the socket closes
  served s(d);
  {
    ws_client c(s.port);
    for (int id = 0; id < 4; ++id)
      c.send({{"type", "generate"}, {"id", id}, {"prompt", "Once upon a time"}, {"max_tokens", 480}, {"ignore_eos", true}});
    CHECK(c.receive()["type"] == "token");
    CHECK(metric_reaches(s.port, "num_requests_running", 4));
    c.ws.next_layer().socket().close();  // abrupt: no close frame
  }
  CHECK(engine_idle(s.port));
  {
    ws_client c(s.port);
    c.send({{"type", "generate"}, {"id", 1}, {"prompt", "Once upon a time"}, {"max_tokens", 480}, {"ignore_eos", true}});
    CHECK(c.receive()["type"] == "token");
    c.ws.close(beast::websocket::close_code::normal);  // polite
  }
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway ws: a tiny send queue merges token messages without losing text", "[gateway][ws]") {
  if (!has_stories()) return;
  auto d = stories_deployment();
  d.server.ws_max_queued_messages = 1;
  served s(d);
  ws_client c(s.port);
  for (int id = 0; id < 8; ++id)
    c.send({{"type", "generate"}, {"id", id}, {"prompt", ws_prompts[id % ws_prompts.size()]}, {"max_tokens", 40},
            {"temperature", 0}, {"ignore_eos", true}});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a slow reader
  std::map<int, id_result> results;
  int num_done = 0;
  while (num_done < 8) {
    const auto msg = c.receive();
    auto& r = results[msg["id"].get<int>()];
    if (msg["type"] == "token") {
      CHECK(msg["index"] == r.next_index);
      r.next_index += int(msg["token_ids"].size());
      r.text += msg["text"].get<std::string>();
    } else {
      CHECK(msg["type"] == "done");
      ++num_done;
    }
  }
  for (int id = 0; id < 8; ++id) {
    CHECK(results[id].next_index == 40);
    CHECK(results[id].text == engine_text(*s.eng, ws_prompts[id % ws_prompts.size()], 40));
  }
}

// A WebSocket generate runs through completion_call, the HTTP route's code: for the same
// greedy request (a JSON schema, chat messages, logprobs) it gives the same text, finish
// reason, usage and logprobs as /v1/completions and /v1/chat/completions. Against a real
// server driving stories260K.
#include <atomic>
#include <cmath>
#include <thread>

#include "tests/actors/gateway/gateway_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

const json person_schema = json::parse(R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}},
    "required": ["name"], "additionalProperties": false})");

/// What one WebSocket generation streamed.
struct ws_result {
  std::string text;
  json logprobs = json::array();
  json tool_calls = json::array();  ///< the streamed pieces, reassembled as OpenAI clients do
  json done;
};

ws_result ws_generate(int port, json msg) {
  ws_client c(port);
  msg["type"] = "generate";
  msg["id"] = "g";
  c.send(msg);
  ws_result r;
  int next_index = 0;
  for (;;) {
    const auto m = c.receive();
    REQUIRE(m["id"] == "g");
    if (m["type"] != "token") {
      r.done = m;
      return r;
    }
    CHECK(m["index"] == next_index);
    next_index += int(m["token_ids"].size());
    r.text += m["text"].get<std::string>();
    if (m.contains("logprobs"))
      for (const auto& l : m["logprobs"]) r.logprobs.push_back(l);
    for (const auto& piece : m.value("tool_calls", json::array())) {
      const auto k = piece["index"].get<std::size_t>();
      if (k == r.tool_calls.size()) {  // a call's first piece: id, type and name
        CHECK(piece.contains("id"));
        CHECK(piece["type"] == "function");
        r.tool_calls.push_back({{"id", piece["id"]}, {"type", "function"},
                                {"function", {{"name", piece["function"]["name"]}, {"arguments", ""}}}});
      } else {
        REQUIRE(k + 1 == r.tool_calls.size());  // later pieces continue the last call
        CHECK_FALSE(piece.contains("id"));
      }
      r.tool_calls[k]["function"]["arguments"] =
          r.tool_calls[k]["function"]["arguments"].get<std::string>() + piece["function"]["arguments"].get<std::string>();
    }
  }
}

json user_messages() { return json::array({{{"role", "user"}, {"content", "Tell me a story about a cat."}}}); }

}  // namespace

TEST_CASE("gateway ws: a generate with a JSON schema gives the HTTP route's text and finish", "[gateway][ws][structured]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  const json format = {{"type", "json_schema"}, {"json_schema", {{"name", "person"}, {"schema", person_schema}}}};
  const json fields = {{"prompt", "Once upon a time"}, {"max_tokens", 48}, {"temperature", 0}, {"response_format", format}};
  auto http_answer = post_json(s.port, "/v1/completions", fields);
  REQUIRE(http_answer.status == 200);
  const json choice = http_answer.body_json()["choices"][0];
  const auto ws = ws_generate(s.port, fields);
  REQUIRE(ws.done["type"] == "done");
  CHECK(ws.text == choice["text"]);
  CHECK(ws.done["finish_reason"] == choice["finish_reason"]);
  CHECK(ws.done["usage"]["completion_tokens"] == http_answer.body_json()["usage"]["completion_tokens"]);
  // The constraint held: a whole output is the schema's JSON.
  if (choice["finish_reason"] == "stop") CHECK(json::parse(ws.text).contains("name"));
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway ws: a chat generate with logprobs matches /v1/chat/completions", "[gateway][ws][logprobs]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  const json fields = {{"messages", user_messages()}, {"max_tokens", 24}, {"temperature", 0}, {"ignore_eos", true},
                       {"logprobs", true}, {"top_logprobs", 2}};
  auto http_answer = post_json(s.port, "/v1/chat/completions", fields);
  REQUIRE(http_answer.status == 200);
  const json choice = http_answer.body_json()["choices"][0];
  const auto ws = ws_generate(s.port, fields);
  REQUIRE(ws.done["type"] == "done");
  CHECK(ws.text == choice["message"]["content"]);
  CHECK(ws.done["finish_reason"] == "length");
  CHECK(ws.done["finish_reason"] == choice["finish_reason"]);
  const json& expected = choice["logprobs"]["content"];
  REQUIRE(ws.logprobs.size() == expected.size());
  REQUIRE(ws.logprobs.size() == 24);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("token " << i);
    CHECK(ws.logprobs[i]["token"] == expected[i]["token"]);
    CHECK(std::abs(ws.logprobs[i]["logprob"].get<double>() - expected[i]["logprob"].get<double>()) < 1e-4);
    CHECK(ws.logprobs[i]["top_logprobs"].size() == 2);
  }
}

TEST_CASE("gateway ws: a chat generate with forced tools streams the HTTP route's tool calls", "[gateway][ws][tools]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}},
                     "required": ["city"], "additionalProperties": false}}}])");
  const json fields = {{"messages", json::array({{{"role", "user"}, {"content", "What is the weather in Oslo?"}}})},
                       {"seed", 3}, {"max_tokens", 120}, {"tools", tools}, {"tool_choice", "required"},
                       {"parallel_tool_calls", false}};
  auto http_answer = post_json(s.port, "/v1/chat/completions", fields);
  REQUIRE(http_answer.status == 200);
  const json choice = http_answer.body_json()["choices"][0];
  REQUIRE(choice["finish_reason"] == "tool_calls");
  const auto ws = ws_generate(s.port, fields);
  REQUIRE(ws.done["type"] == "done");
  CHECK(ws.done["finish_reason"] == "tool_calls");
  CHECK(ws.done["content"].is_null());
  REQUIRE(ws.done["tool_calls"].size() == 1);
  const json& call = ws.done["tool_calls"][0];
  const json& expected = choice["message"]["tool_calls"][0];
  CHECK(call["type"] == "function");
  CHECK(call["function"] == expected["function"]);  // name and arguments text; ids are fresh
  CHECK(call["id"].get<std::string>().rfind("call_", 0) == 0);
  // The token messages streamed the call in pieces (its markup never as text), which
  // reassemble into done's call, id included.
  CHECK(ws.text.find("get_weather") == std::string::npos);
  REQUIRE(ws.tool_calls.size() == 1);
  CHECK(ws.tool_calls[0] == call);
  CHECK(json::parse(ws.tool_calls[0]["function"]["arguments"].get<std::string>()).contains("city"));
}

TEST_CASE("gateway ws: a request too large for the whole waiting queue is refused as over HTTP", "[gateway][ws][errors]") {
  if (!has_stories()) return;
  auto d = stories_deployment();
  d.server.max_waiting_tokens = 4;
  served s(d);
  const json fields = {{"prompt", "Once upon a time there was"}, {"max_tokens", 4}};
  auto http_answer = post_json(s.port, "/v1/completions", fields);
  REQUIRE(http_answer.status == 400);
  const auto ws = ws_generate(s.port, fields);
  REQUIRE(ws.done["type"] == "error");
  CHECK(ws.done["error"]["code"] == http_answer.body_json()["error"]["code"]);
  CHECK(ws.done["error"]["code"] == "exceeds_queue_capacity");
}

TEST_CASE("gateway ws: shutdown past the grace ends running generations with abort", "[gateway][ws][shutdown]") {
  if (!has_stories()) return;
  auto d = stories_deployment();
  d.server.shutdown_grace_s = 0.05;
  d.debug.step_delay_s = 0.01;  // 480 tokens take 4.8 s at least: never within the grace
  served s(d);
  ws_client c(s.port);
  c.send({{"type", "generate"}, {"id", "a"}, {"prompt", "Once upon a time"}, {"max_tokens", 480}, {"ignore_eos", true}});
  REQUIRE(c.receive()["type"] == "token");
  std::thread shutdown([&] {
    s.srv->request_shutdown();
    s.srv->wait();
  });
  json msg;
  do msg = c.receive();
  while (msg["type"] == "token");
  CHECK(msg["type"] == "done");
  CHECK(msg["finish_reason"] == "abort");
  // Then the server closes the socket (going away); answering lets the shutdown finish.
  beast::flat_buffer buf;
  beast::error_code ec;
  c.ws.read(buf, ec);
  CHECK(ec == beast::websocket::error::closed);
  CHECK(c.ws.reason().code == beast::websocket::close_code::going_away);
  shutdown.join();
  CHECK(all_blocks_return(*s.eng));
}

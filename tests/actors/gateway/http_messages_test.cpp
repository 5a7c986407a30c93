// POST /v1/messages and /v1/messages/count_tokens against a real server: the answer is
// the chat route's answer reshaped, streamed or not; errors (401s included) are in
// Anthropic's shape; x-api-key is a key header.
#include <catch2/catch.hpp>

#include "tests/actors/gateway/gateway_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

/// A POST with extra headers (API keys, anthropic-version).
http_answer post_with(int port, const std::string& target, const header_list& headers, const std::string& body) {
  return http_call(port, http::verb::post, target, body, "application/json", headers);
}

const json user_turn = json::array({{{"role", "user"}, {"content", "Once upon a time"}}});

json messages_body(const json& extra = json::object()) {
  json body = {{"max_tokens", 12}, {"temperature", 0}, {"messages", user_turn}};
  body.update(extra);
  return body;
}

/// The `event:` names and data of an SSE body.
std::vector<std::pair<std::string, json>> events_of(const std::string& body) {
  std::vector<std::pair<std::string, json>> out;
  std::size_t pos = 0;
  while (pos < body.size()) {
    const auto end = body.find("\n\n", pos);
    REQUIRE(end != std::string::npos);
    const std::string event = body.substr(pos, end - pos);
    REQUIRE(event.starts_with("event: "));
    const auto nl = event.find('\n');
    out.emplace_back(event.substr(7, nl - 7), json::parse(event.substr(nl + 7)));
    pos = end + 2;
  }
  return out;
}

void check_anthropic_error(const http_answer& a, int status, const std::string& type, const std::string& text) {
  CHECK(a.status == status);
  const json body = json::parse(a.body);
  CHECK(body["type"] == "error");
  CHECK(body["error"]["type"] == type);
  CHECK(body["error"]["message"].get<std::string>().find(text) != std::string::npos);
  CHECK_FALSE(body.contains("param"));
}

}  // namespace

TEST_CASE("gateway messages: the chat route's answer, as a message and as events", "[gateway][http][anthropic]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  const auto chat = post_json(s.port, "/v1/chat/completions", messages_body());
  REQUIRE(chat.status == 200);
  const json expected = chat.body_json()["choices"][0];

  const auto created = post_json(s.port, "/v1/messages", messages_body());
  REQUIRE(created.status == 200);
  CHECK(created.content_type == "application/json");
  const json message = created.body_json();
  CHECK(message["type"] == "message");
  CHECK(message["model"] == chat.body_json()["model"]);
  REQUIRE(message["content"].size() == 1);
  CHECK(message["content"][0]["text"] == expected["message"]["content"]);
  CHECK(message["stop_reason"] == (expected["finish_reason"] == "length" ? "max_tokens" : "end_turn"));
  const json usage = message["usage"];
  CHECK(usage["input_tokens"].get<int>() + usage["cache_read_input_tokens"].get<int>() ==
        chat.body_json()["usage"]["prompt_tokens"]);
  CHECK(usage["output_tokens"] == chat.body_json()["usage"]["completion_tokens"]);

  const auto streamed = post_json(s.port, "/v1/messages", messages_body({{"stream", true}}));
  REQUIRE(streamed.status == 200);
  CHECK(streamed.content_type.starts_with("text/event-stream"));
  const auto events = events_of(streamed.body);
  REQUIRE(events.size() >= 6);
  CHECK(events[0].first == "message_start");
  CHECK(events[0].second["message"]["usage"]["input_tokens"] == chat.body_json()["usage"]["prompt_tokens"]);
  std::string text;
  for (const auto& [name, data] : events) {
    CHECK(data["type"] == name);
    if (name == "content_block_delta") {
      CHECK(data["index"] == 0);
      text += data["delta"]["text"].get<std::string>();
    }
  }
  CHECK(text == expected["message"]["content"]);
  CHECK(events[events.size() - 2].first == "message_delta");
  CHECK(events[events.size() - 2].second["delta"]["stop_reason"] == message["stop_reason"]);
  CHECK(events.back().first == "message_stop");
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway messages: count_tokens is the prompt /v1/messages renders", "[gateway][http][anthropic]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  const json body = messages_body({{"system", "Tell a story."}, {"max_tokens", 1}});
  const auto created = post_json(s.port, "/v1/messages", body);
  REQUIRE(created.status == 200);
  const json usage = created.body_json()["usage"];
  json count_body = body;
  count_body.erase("max_tokens");
  const auto counted = post_json(s.port, "/v1/messages/count_tokens", count_body);
  REQUIRE(counted.status == 200);
  CHECK(counted.body_json() ==
        json({{"input_tokens", usage["input_tokens"].get<int>() + usage["cache_read_input_tokens"].get<int>()}}));
  const auto without_system = post_json(s.port, "/v1/messages/count_tokens", json{{"messages", user_turn}});
  CHECK(without_system.body_json()["input_tokens"].get<int>() < counted.body_json()["input_tokens"].get<int>());
  check_anthropic_error(post_json(s.port, "/v1/messages/count_tokens", json{{"system", 1}, {"messages", user_turn}}),
                        400, "invalid_request_error", "system must be");
}

TEST_CASE("gateway messages: refusals in Anthropic's shape", "[gateway][http][anthropic]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  json no_max = messages_body();
  no_max.erase("max_tokens");
  check_anthropic_error(post_json(s.port, "/v1/messages", no_max), 400, "invalid_request_error", "max_tokens is required");
  check_anthropic_error(post_json(s.port, "/v1/messages", messages_body({{"model", "claude-x"}})), 404,
                        "not_found_error", "claude-x");
  check_anthropic_error(http_call(s.port, http::verb::post, "/v1/messages", "{"), 400, "invalid_request_error", "not valid JSON");
  // The chat parse's errors come back too: a prompt longer than the context.
  std::string story;
  for (int i = 0; i < 300; ++i) story += "Once upon a time there was a cat. ";
  json too_long = messages_body({{"messages", json::array({{{"role", "user"}, {"content", story}}})}});
  check_anthropic_error(post_json(s.port, "/v1/messages", too_long), 400, "invalid_request_error", "context");
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway messages: x-api-key is a key, and a refused key is an Anthropic 401 there", "[gateway][http][anthropic][auth]") {
  if (!has_stories()) return;
  auto d = stories_deployment();
  d.server.api_keys = {"sk-ant"};
  served s(d);
  const std::string body = messages_body().dump();
  CHECK(post_with(s.port, "/v1/messages", {{"x-api-key", "sk-ant"}, {"anthropic-version", "2023-06-01"}}, body).status == 200);
  CHECK(post_with(s.port, "/v1/messages", {{"Authorization", "Bearer sk-ant"}}, body).status == 200);
  CHECK(post_with(s.port, "/v1/chat/completions", {{"x-api-key", "sk-ant"}}, body).status == 200);
  check_anthropic_error(post_with(s.port, "/v1/messages", {{"x-api-key", "sk-wrong"}}, body), 401,
                        "authentication_error", "API key");
  check_anthropic_error(post_with(s.port, "/v1/messages/count_tokens", {}, body), 401, "authentication_error", "API key");
  // Elsewhere a refused key stays OpenAI's 401; an Authorization header counts over x-api-key.
  const auto chat = post_with(s.port, "/v1/chat/completions", {{"x-api-key", "sk-wrong"}}, body);
  CHECK(chat.status == 401);
  CHECK(json::parse(chat.body)["error"]["code"] == "invalid_api_key");
  CHECK(post_with(s.port, "/v1/messages", {{"Authorization", "Bearer sk-wrong"}, {"x-api-key", "sk-ant"}}, body).status == 401);
}

TEST_CASE("gateway messages: a forced tool's input keeps the property order of its input_schema", "[gateway][http][anthropic]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  // Sent as text: a body built as nlohmann::json would arrive with alpha before zeta.
  const std::string body = R"({"max_tokens": 150, "messages": [{"role": "user", "content": "Weather?"}],
    "tools": [{"name": "w", "input_schema": {"type": "object", "properties": {"zeta": {"type": "string", "maxLength": 6},
      "alpha": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["zeta", "alpha"], "additionalProperties": false}}],
    "tool_choice": {"type": "tool", "name": "w"}})";
  auto a = http_call(s.port, http::verb::post, "/v1/messages", body);
  REQUIRE(a.status == 200);
  const auto message = nlohmann::ordered_json::parse(a.body);
  CHECK(message.begin().key() == "id");  // Anthropic's order, not sorted
  const auto& use = message["content"].back();
  REQUIRE(use["type"] == "tool_use");
  std::vector<std::string> keys;
  for (const auto& [key, value] : use["input"].items()) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"zeta", "alpha"});
}

TEST_CASE("gateway messages: a matched stop sequence is the stop_reason, named in stop_sequence and in chat's stop_reason",
          "[gateway][http][anthropic]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  const auto plain = post_json(s.port, "/v1/chat/completions", messages_body({{"max_tokens", 24}}));
  REQUIRE(plain.status == 200);
  const json plain_choice = plain.body_json()["choices"][0];
  CHECK(plain_choice.contains("stop_reason"));
  CHECK(plain_choice["stop_reason"].is_null());  // a length or an end of sequence: nothing named
  const std::string text = plain_choice["message"]["content"].get<std::string>();
  REQUIRE(text.size() >= 10);
  const std::string stop = text.substr(6, 3);  // greedy: the same text again, so this matches
  const json stops = json::array({"never-written-xyz", stop});

  const auto chat = post_json(s.port, "/v1/chat/completions", messages_body({{"max_tokens", 24}, {"stop", stops}}));
  REQUIRE(chat.status == 200);
  CHECK(chat.body_json()["choices"][0]["finish_reason"] == "stop");
  CHECK(chat.body_json()["choices"][0]["stop_reason"] == stop);

  const auto message = post_json(s.port, "/v1/messages", messages_body({{"max_tokens", 24}, {"stop_sequences", stops}}));
  REQUIRE(message.status == 200);
  CHECK(message.body_json()["stop_reason"] == "stop_sequence");
  CHECK(message.body_json()["stop_sequence"] == stop);
  CHECK(message.body_json()["content"][0]["text"] == chat.body_json()["choices"][0]["message"]["content"]);

  const auto streamed = post_json(s.port, "/v1/messages",
                                  messages_body({{"max_tokens", 24}, {"stop_sequences", stops}, {"stream", true}}));
  const auto events = events_of(streamed.body);
  REQUIRE(events.size() >= 3);
  CHECK(events[events.size() - 2].second["delta"]["stop_reason"] == "stop_sequence");
  CHECK(events[events.size() - 2].second["delta"]["stop_sequence"] == stop);
}

TEST_CASE("gateway http: a stop_token_ids entry that ended the text is chat's stop_reason", "[gateway][http]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  // The greedy tokens of the chat prompt, from the WebSocket (its token messages carry ids).
  ws_client c(s.port);
  c.send({{"type", "generate"}, {"id", "g"}, {"messages", user_turn}, {"max_tokens", 8}, {"temperature", 0}});
  std::vector<int> ids;
  for (json m = c.receive(); m["type"] == "token"; m = c.receive())
    for (const auto& id : m["token_ids"]) ids.push_back(id.get<int>());
  REQUIRE(ids.size() >= 4);
  const int stop_id = ids[3];
  const auto chat = post_json(s.port, "/v1/chat/completions",
                              messages_body({{"max_tokens", 8}, {"stop_token_ids", json::array({stop_id})}}));
  REQUIRE(chat.status == 200);
  const json choice = chat.body_json()["choices"][0];
  CHECK(choice["finish_reason"] == "stop");
  CHECK(choice["stop_reason"] == stop_id);
  CHECK(chat.body_json()["usage"]["completion_tokens"].get<int>() <= 4);
}

// Structured outputs and tools over HTTP against a real server driving stories260K (the
// plain chat template, so the generic JSON call format).
#include "actors/gateway/sse.hpp"
#include "core/api/tool_calls.hpp"
#include "tests/actors/gateway/gateway_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

const json weather_tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}},
                   "required": ["city"], "additionalProperties": false}}}])");

std::vector<json> sse_chunks(const std::string& body) {
  auto parts = gateway::try_split_sse(body);
  if (!parts) FAIL(parts.error().message);
  REQUIRE(parts->size() >= 2);
  CHECK(parts->back() == "[DONE]");
  std::vector<json> out;
  for (std::size_t i = 0; i + 1 < parts->size(); ++i) out.push_back(json::parse((*parts)[i]));
  return out;
}

json chat(const json& extra) {
  json body = extra;
  body["messages"] = json::array({{{"role", "user"}, {"content", "What is the weather in Oslo?"}}});
  return body;
}

}  // namespace

TEST_CASE("gateway http: with tools, a text answer is content, streamed and not alike", "[gateway][http][tools]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  auto without = post_json(s.port, "/v1/chat/completions", chat({{"max_tokens", 12}, {"temperature", 0}}));
  auto with = post_json(s.port, "/v1/chat/completions",
                        chat({{"max_tokens", 12}, {"temperature", 0}, {"tools", weather_tools}}));
  REQUIRE(with.status == 200);
  const json answer = with.body_json()["choices"][0];
  CHECK(answer["message"]["refusal"].is_null());
  CHECK(answer["message"]["content"].is_string());
  CHECK_FALSE(answer["message"].contains("tool_calls"));
  CHECK(answer["finish_reason"] == "length");
  // The tools are in the prompt.
  CHECK(with.body_json()["usage"]["prompt_tokens"].get<int>() > without.body_json()["usage"]["prompt_tokens"].get<int>());

  auto streamed = post_json(s.port, "/v1/chat/completions",
                            chat({{"max_tokens", 12}, {"temperature", 0}, {"tools", weather_tools}, {"stream", true}}));
  REQUIRE(streamed.status == 200);
  const auto chunks = sse_chunks(streamed.body);
  CHECK(chunks.front()["choices"][0]["delta"]["refusal"].is_null());
  std::string text;
  for (const auto& c : chunks) {
    const auto& delta = c["choices"][0]["delta"];
    CHECK_FALSE(delta.contains("tool_calls"));
    if (delta.contains("content")) text += delta["content"].get<std::string>();
  }
  CHECK(text == answer["message"]["content"]);
  CHECK(chunks.back()["choices"][0]["finish_reason"] == "length");
}

TEST_CASE("gateway http: a refused constraint is a 400 before anything is queued", "[gateway][http][structured]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  auto bad = post_json(s.port, "/v1/chat/completions",
                       chat({{"response_format", {{"type", "json_schema"},
                                                  {"json_schema", {{"name", "x"},
                                                                   {"schema", {{"type", "object"},
                                                                               {"properties", {{"tags", {{"type", "array"},
                                                                                                         {"contains", {{"type", "string"}}}}}}}}}}}}}}));
  REQUIRE(bad.status == 400);
  const json e = bad.body_json()["error"];
  CHECK(e["type"] == "invalid_request_error");
  CHECK(e["param"] == "response_format");
  CHECK(e["code"] == "invalid_grammar");
  CHECK(e["message"].get<std::string>().find("'contains' at /properties/tags") != std::string::npos);
  CHECK(s.eng->metrics().grammar_refused_total.load() == 1);
  CHECK(s.eng->metrics().grammar_compile_seconds.count() == 0);
  // A schema that compiles is timed once; the same one again is a cache hit.
  const json regex = {{"prompt", "Once"}, {"max_tokens", 2}, {"guided_regex", "[a-z]+"}};
  REQUIRE(post_json(s.port, "/v1/completions", regex).status == 200);
  REQUIRE(post_json(s.port, "/v1/completions", regex).status == 200);
  CHECK(s.eng->metrics().grammar_compile_seconds.count() == 1);
  CHECK(get(s.port, "/metrics").body.find("inflight:grammar_refused_total{model_name=") != std::string::npos);
  auto both = post_json(s.port, "/v1/completions", {{"prompt", "Once"}, {"guided_regex", "a+"}, {"guided_choice", json::array({"a"})}});
  REQUIRE(both.status == 400);
  CHECK(both.body_json()["error"]["code"] == "conflicting_constraints");
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway http: sampled outputs hold to their constraint", "[gateway][http][structured]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  for (int seed = 1; seed <= 4; ++seed) {
    auto choice = post_json(s.port, "/v1/completions", {{"prompt", "Once"}, {"seed", seed}, {"max_tokens", 30},
                                                        {"guided_choice", {"cat", "dog", "bird"}}});
    REQUIRE(choice.status == 200);
    const auto text = choice.body_json()["choices"][0]["text"].get<std::string>();
    CHECK((text == "cat" || text == "dog" || text == "bird"));
    CHECK(choice.body_json()["choices"][0]["finish_reason"] == "stop");

    auto forced = post_json(s.port, "/v1/chat/completions",
                            chat({{"seed", seed}, {"max_tokens", 120}, {"tools", weather_tools},
                                  {"tool_choice", "required"}, {"parallel_tool_calls", false}}));
    REQUIRE(forced.status == 200);
    const json c = forced.body_json()["choices"][0];
    CHECK(c["finish_reason"] == "tool_calls");
    CHECK(c["message"]["content"].is_null());
    REQUIRE(c["message"].contains("tool_calls"));
    REQUIRE(c["message"]["tool_calls"].size() == 1);
    const json call = c["message"]["tool_calls"][0];
    CHECK(call["function"]["name"] == "get_weather");
    const json args = json::parse(call["function"]["arguments"].get<std::string>());
    CHECK(args.size() == 1);
    CHECK(args["city"].get<std::string>().size() <= 8 * 4);
  }
}

TEST_CASE("gateway http: constrained outputs and forced tool calls write properties in the client's schema order",
          "[gateway][http][structured]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  // Sent as text: a body built as nlohmann::json would arrive with alpha before zeta.
  const std::string schema = R"({"type": "object", "properties": {"zeta": {"type": "string", "maxLength": 6},
      "alpha": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["zeta", "alpha"], "additionalProperties": false})";
  const std::string messages = R"("messages": [{"role": "user", "content": "Weather?"}], "max_tokens": 150)";
  const auto keys_of = [](const std::string& text) {
    std::vector<std::string> keys;
    const auto object = nlohmann::ordered_json::parse(text);  // alive through the loop
    for (const auto& [key, value] : object.items()) keys.push_back(key);
    return keys;
  };
  const std::vector<std::string> expected = {"zeta", "alpha"};
  for (int seed = 1; seed <= 2; ++seed) {
    const std::string seed_field = R"("seed": )" + std::to_string(seed);
    auto structured = http_call(s.port, http::verb::post, "/v1/chat/completions",
                                "{" + messages + ", " + seed_field + R"(, "response_format": {"type": "json_schema",
                                "json_schema": {"name": "w", "schema": )" + schema + "}}}");
    REQUIRE(structured.status == 200);
    CHECK(keys_of(structured.body_json()["choices"][0]["message"]["content"].get<std::string>()) == expected);

    auto forced = http_call(s.port, http::verb::post, "/v1/chat/completions",
                            "{" + messages + ", " + seed_field + R"(, "tool_choice": "required", "parallel_tool_calls": false,
                            "tools": [{"type": "function",
                            "function": {"name": "w", "parameters": )" + schema + "}}]}");
    REQUIRE(forced.status == 200);
    const json message = forced.body_json()["choices"][0]["message"];
    INFO(forced.body);
    REQUIRE(message.contains("tool_calls"));
    const json call = message["tool_calls"][0];
    CHECK(keys_of(call["function"]["arguments"].get<std::string>()) == expected);
  }
}

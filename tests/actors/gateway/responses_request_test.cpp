// /v1/responses bodies translated into chat bodies (responses_request, responses_input),
// and the stored conversations they continue (responses_store).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "actors/gateway/responses_request.hpp"
#include "actors/gateway/responses_store.hpp"

using namespace inflight::gateway;
using nlohmann::json;

namespace {

json parse_ok(const json& body, std::shared_ptr<const conversation_turn> previous = nullptr) {
  auto r = try_parse_responses(body, std::move(previous));
  if (!r) FAIL(r.error().param + ": " + r.error().message);
  return r->chat_body;
}

api_error parse_error(const json& body) {
  auto r = try_parse_responses(body, nullptr);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().status == 400);
  return r.error();
}

}  // namespace

TEST_CASE("responses request: a string input is one user message after the instructions", "[gateway][responses]") {
  const json chat = parse_ok({{"input", "Tell me a story"}, {"instructions", "Be brief."}, {"max_output_tokens", 20},
                              {"temperature", 0}, {"top_p", 0.5}, {"stream", true}});
  CHECK(chat["messages"] == json::parse(R"([{"role": "system", "content": "Be brief."},
                                            {"role": "user", "content": "Tell me a story"}])"));
  CHECK(chat["max_tokens"] == 20);
  CHECK(chat["temperature"] == 0);
  CHECK(chat["top_p"] == 0.5);
  CHECK(chat["stream"] == true);
  CHECK_FALSE(chat.contains("max_output_tokens"));
  CHECK_FALSE(chat.contains("instructions"));
}

TEST_CASE("responses request: items become messages, calls join their assistant message", "[gateway][responses]") {
  const json input = json::parse(R"([
    {"role": "developer", "content": [{"type": "input_text", "text": "Use tools."}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather "},
                                                    {"type": "input_text", "text": "in Oslo?"}]},
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
    {"type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"},
    {"type": "function_call", "call_id": "call_b", "name": "get_time", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_a", "output": "12 C"},
    {"type": "function_call_output", "call_id": "call_b", "output": [{"type": "input_text", "text": "noon"}]},
    {"type": "function_call", "call_id": "call_c", "name": "get_time", "arguments": "{}"}
  ])");
  const json messages = parse_ok({{"input", input}})["messages"];
  REQUIRE(messages.size() == 6);
  CHECK(messages[0] == json::parse(R"({"role": "developer", "content": [{"type": "text", "text": "Use tools."}]})"));
  CHECK(messages[1]["content"][1]["text"] == "in Oslo?");
  // The reasoning item is left out; both calls join the assistant's text.
  CHECK(messages[2]["role"] == "assistant");
  CHECK(messages[2]["content"][0]["text"] == "Checking.");
  REQUIRE(messages[2]["tool_calls"].size() == 2);
  CHECK(messages[2]["tool_calls"][0] == json::parse(R"({"id": "call_a", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}})"));
  CHECK(messages[2]["tool_calls"][1]["id"] == "call_b");
  CHECK(messages[3] == json::parse(R"({"role": "tool", "tool_call_id": "call_a", "content": "12 C"})"));
  CHECK(messages[4]["content"][0]["text"] == "noon");
  // A call after a tool message starts a new assistant message with no text.
  CHECK(messages[5]["role"] == "assistant");
  CHECK(messages[5]["content"].is_null());
  CHECK(messages[5]["tool_calls"][0]["id"] == "call_c");
}

TEST_CASE("responses request: what a text server cannot read is a 400 naming it", "[gateway][responses]") {
  const json image = json::parse(R"([{"role": "user", "content": [{"type": "input_text", "text": "What is this?"},
      {"type": "input_image", "image_url": "https://example.com/a.png"}]}])");
  auto e = parse_error({{"input", image}});
  CHECK(e.param == "input[0].content[1].type");
  CHECK(e.message.find("input_image") != std::string::npos);
  CHECK(parse_error({{"input", json::parse(R"([{"role": "user", "content": "a"}, {"type": "web_search_call", "id": "x"}])")}})
            .param == "input[1].type");
  CHECK(parse_error({{"input", json::parse(R"([{"role": "tool", "content": "a"}])")}}).param == "input[0].role");
  CHECK(parse_error({{"input", json::parse(R"([{"type": "function_call", "name": "f", "arguments": "{}"}])")}}).param ==
        "input[0].call_id");
  CHECK(parse_error({{"input", json::parse(R"([{"type": "function_call_output", "call_id": "c"}])")}}).param ==
        "input[0].output");
  CHECK(parse_error({{"input", 3}}).param == "input");
  CHECK(parse_error(json::object()).param == "input");
  const json tools = json::parse(R"([{"type": "function", "name": "f", "parameters": {"type": "object"}},
                                     {"type": "web_search_preview"}])");
  e = parse_error({{"input", "x"}, {"tools", tools}});
  CHECK(e.param == "tools[1].type");
  CHECK(e.message.find("web_search_preview") != std::string::npos);
  CHECK(parse_error({{"input", "x"}, {"background", true}}).param == "background");
  CHECK(parse_error({{"input", "x"}, {"truncation", "auto"}}).param == "truncation");
  CHECK(parse_error({{"input", "x"}, {"metadata", {{"k", 1}}}}).param == "metadata.k");
  CHECK(parse_error({{"input", "x"}, {"text", {{"format", {{"type", "yaml"}}}}}}).param == "text.format.type");
  CHECK(parse_error({{"input", "x"}, {"tool_choice", {{"type", "file_search"}}}}).param == "tool_choice");
  CHECK(parse_error({{"input", "x"}, {"instructions", json::array()}}).param == "instructions");
  // Accepted and left alone: truncation "disabled", include, a reasoning item alone with a message.
  parse_ok({{"input", "x"}, {"truncation", "disabled"}, {"include", {"reasoning.encrypted_content"}}});
}

TEST_CASE("responses request: tools, tool_choice, text.format and reasoning in chat's names", "[gateway][responses]") {
  const json body = json::parse(R"({
    "input": "x",
    "tools": [{"type": "function", "name": "get_weather", "description": "Weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": true}],
    "tool_choice": {"type": "function", "name": "get_weather"},
    "parallel_tool_calls": false,
    "text": {"format": {"type": "json_schema", "name": "person", "schema": {"type": "object"}, "strict": true}},
    "reasoning": {"effort": "low", "summary": "auto"},
    "guided_regex": "[a-z]+", "top_k": 5, "seed": 7, "metadata": {"run": "1"}
  })");
  auto r = try_parse_responses(body, nullptr);
  REQUIRE(r.has_value());
  const json& chat = r->chat_body;
  CHECK(chat["tools"] == json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
      "strict": true}}])"));
  CHECK(chat["tool_choice"] == json::parse(R"({"type": "function", "function": {"name": "get_weather"}})"));
  CHECK(chat["parallel_tool_calls"] == false);
  CHECK(chat["response_format"] == json::parse(R"({"type": "json_schema",
      "json_schema": {"name": "person", "schema": {"type": "object"}, "strict": true}})"));
  CHECK(chat["reasoning_effort"] == "low");
  CHECK(chat["guided_regex"] == "[a-z]+");
  CHECK(chat["top_k"] == 5);
  CHECK(chat["seed"] == 7);
  CHECK_FALSE(chat.contains("metadata"));
  // The echo: the request as the Response object repeats it.
  const json& echo = r->echo;
  CHECK(echo["tools"][0] == json::parse(R"({"type": "function", "name": "get_weather", "description": "Weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": true})"));
  CHECK(echo["tool_choice"] == body["tool_choice"]);
  CHECK(echo["parallel_tool_calls"] == false);
  CHECK(echo["reasoning"] == json::parse(R"({"effort": "low", "summary": "auto"})"));
  CHECK(echo["text"] == body["text"]);
  CHECK(echo["metadata"] == json::parse(R"({"run": "1"})"));
  CHECK(r->store);
  CHECK_FALSE(r->stream);

  CHECK(parse_ok({{"input", "x"}, {"text", {{"format", {{"type", "json_object"}}}}}})["response_format"] ==
        json::parse(R"({"type": "json_object"})"));
  CHECK_FALSE(parse_ok({{"input", "x"}, {"text", {{"format", {{"type", "text"}}}}}}).contains("response_format"));
}

TEST_CASE("responses request: the echo's defaults are OpenAI's", "[gateway][responses]") {
  auto r = try_parse_responses({{"input", "x"}, {"store", false}}, nullptr);
  REQUIRE(r.has_value());
  CHECK(r->echo == json::parse(R"({"instructions": null, "tools": [], "tool_choice": "auto", "temperature": 1.0,
      "top_p": 1.0, "parallel_tool_calls": true, "max_output_tokens": null, "store": false, "metadata": {},
      "truncation": "disabled", "previous_response_id": null, "text": {"format": {"type": "text"}},
      "reasoning": {"effort": null, "summary": null}})"));
  CHECK_FALSE(r->store);
  CHECK(r->input_items == json::parse(R"([{"type": "message", "role": "user", "content": "x"}])"));
}

TEST_CASE("responses request: a stored conversation comes before the input, not its instructions", "[gateway][responses]") {
  auto first = std::make_shared<conversation_turn>();
  first->items = json::parse(R"([{"type": "message", "role": "user", "content": "Hi"},
      {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
       "content": [{"type": "output_text", "text": "Hello", "annotations": [], "logprobs": []}]}])");
  auto second = std::make_shared<conversation_turn>();
  second->parent = first;
  second->items = json::parse(R"([{"type": "message", "role": "user", "content": "More"},
      {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}", "status": "completed"}])");
  const json messages = parse_ok({{"input", json::parse(R"([{"type": "function_call_output", "call_id": "call_1",
                                                            "output": "done"}])")},
                                  {"instructions", "New rules."}, {"previous_response_id", "resp_2"}},
                                 second)["messages"];
  REQUIRE(messages.size() == 6);
  CHECK(messages[0] == json::parse(R"({"role": "system", "content": "New rules."})"));
  CHECK(messages[1]["content"] == "Hi");
  CHECK(messages[2]["content"][0]["text"] == "Hello");
  CHECK(messages[3]["content"] == "More");
  CHECK(messages[4]["tool_calls"][0]["id"] == "call_1");
  CHECK(messages[5]["role"] == "tool");
  // A follow-up may carry no new input.
  CHECK(parse_ok({{"previous_response_id", "resp_2"}}, second)["messages"].size() == 4);
}

TEST_CASE("responses request: the chat parser's errors name the Responses fields", "[gateway][responses]") {
  auto e = to_responses_error(bad_request("max_tokens must be at least 1", "max_tokens"));
  CHECK(e.param == "max_output_tokens");
  CHECK(e.message == "max_output_tokens must be at least 1");
  CHECK(to_responses_error(bad_request("bad", "tools[2].function.parameters")).param == "tools[2].parameters");
  CHECK(to_responses_error(bad_request("bad", "response_format.json_schema.schema")).param == "text.format.schema");
  CHECK(to_responses_error(bad_request("bad", "response_format")).param == "text.format");
  CHECK(to_responses_error(bad_request("bad", "reasoning_effort")).param == "reasoning.effort");
  CHECK(to_responses_error(bad_request("bad", "messages")).param == "input");
  CHECK(to_responses_error(bad_request("bad", "temperature")).param == "temperature");
  CHECK(previous_response_not_found("resp_x").status == 404);
  CHECK(previous_response_not_found("resp_x").param == "previous_response_id");
}

TEST_CASE("responses store: bounded, oldest out first, forgotten after the TTL", "[gateway][responses]") {
  auto now = responses_store::clock::time_point{};
  responses_store store(2, 10.0, [&now] { return now; });
  const auto turn = [](const char* text) {
    auto t = std::make_shared<conversation_turn>();
    t->items.push_back(text);
    return t;
  };
  store.put("a", {{{"id", "a"}}, turn("a")});
  now += std::chrono::seconds(4);
  store.put("b", {{{"id", "b"}}, turn("b")});
  REQUIRE(store.find("a").has_value());
  CHECK(store.find("a")->response["id"] == "a");
  now += std::chrono::seconds(2);
  store.put("c", {{{"id", "c"}}, turn("c")});  // full: "a" leaves
  CHECK_FALSE(store.find("a").has_value());
  CHECK(store.size() == 2);
  now += std::chrono::seconds(9);  // "b" is 11 s old, "c" 9 s
  CHECK_FALSE(store.find("b").has_value());
  CHECK(store.find("c").has_value());
  CHECK(store.erase("c"));
  CHECK_FALSE(store.erase("c"));
  CHECK(store.size() == 0);

  responses_store none(0, 0.0);
  none.put("a", {json::object(), turn("a")});
  CHECK_FALSE(none.find("a").has_value());
}

TEST_CASE("responses store: a conversation outlives the entries it continued", "[gateway][responses]") {
  responses_store store(1, 0.0);
  auto first = std::make_shared<conversation_turn>();
  first->items = json::array({"q1", "a1"});
  store.put("r1", {json::object(), first});
  auto second = std::make_shared<conversation_turn>();
  second->parent = store.find("r1")->turn;
  second->items = json::array({"q2", "a2"});
  first.reset();
  store.put("r2", {json::object(), second});  // evicts r1
  CHECK_FALSE(store.find("r1").has_value());
  CHECK(conversation_items(store.find("r2")->turn) == json::array({"q1", "a1", "q2", "a2"}));
}

TEST_CASE("responses request: tools and text.format schemas keep the client's key order", "[gateway][responses]") {
  const std::string schema = R"({"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}})";
  const std::string text = R"({"input": "hi", "tools": [{"parameters": )" + schema +
                           R"(, "name": "w", "type": "function", "description": "d"}],
                              "text": {"format": {"type": "json_schema", "name": "f", "schema": )" + schema + "}}}";
  auto r = try_parse_responses(json::parse(text), nullptr, nlohmann::ordered_json::parse(text));
  REQUIRE(r.has_value());
  const std::string ordered_schema = R"({"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}})";
  CHECK(r->ordered_chat_body["tools"].dump() ==
        R"([{"type":"function","function":{"name":"w","description":"d","parameters":)" + ordered_schema + "}}]");
  CHECK(r->ordered_chat_body["response_format"]["json_schema"]["schema"].dump() == ordered_schema);
  // The sorted chat body is the same value.
  CHECK(json(r->ordered_chat_body) == r->chat_body);
}

// Messages requests as chat bodies (actors/gateway/anthropic_request, anthropic_messages):
// the translation, the prompt it renders (the same as the chat request a client would
// write by hand), and every 400 naming the Messages field.
#include <catch2/catch.hpp>

#include "actors/gateway/anthropic_request.hpp"
#include "actors/gateway/chat_request.hpp"
#include "actors/gateway/openai_request.hpp"
#include "tests/actors/gateway/byte_model.hpp"

using namespace inflight;
using namespace inflight::gateway;
using nlohmann::json;

namespace {

served_model model() { return test::byte_model({.max_context = 4096}); }

json translate(const json& body, messages_use use = messages_use::create) {
  auto chat = try_translate_messages(body, model(), use);
  if (!chat) FAIL(chat.error().message);
  return *chat;
}

api_error refusal(const json& body, messages_use use = messages_use::create) {
  auto chat = try_translate_messages(body, model(), use);
  if (chat) FAIL("accepted: " << chat->dump());
  CHECK(chat.error().status == 400);
  return chat.error();
}

std::vector<token_id> prompt_of(const json& chat) {
  auto parsed = try_parse_request(chat, api_kind::chat, model());
  if (!parsed) FAIL(parsed.error().message);
  return parsed->prompts.front();
}

const json weather_tool = json::parse(R"({"name": "get_weather", "description": "Weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})");

}  // namespace

TEST_CASE("anthropic request: a tool round trip renders as the chat request written by hand", "[gateway][anthropic]") {
  const json body = json::parse(R"({
    "model": "dummy", "max_tokens": 50, "system": [{"type": "text", "text": "Be brief."}],
    "stop_sequences": ["END"], "temperature": 0.5, "top_k": 4, "metadata": {"user_id": "u1"},
    "messages": [
      {"role": "user", "content": "Weather in Oslo?"},
      {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "I should call the tool", "signature": "sig"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "sunny"}]},
        {"type": "text", "text": "And tomorrow?", "cache_control": {"type": "ephemeral"}}]}]})");
  json with_tools = body;
  with_tools["tools"] = json::array({weather_tool});
  with_tools["tool_choice"] = {{"type", "any"}, {"disable_parallel_tool_use", true}};
  const json chat = translate(with_tools);
  const json expected = json::parse(R"({
    "model": "dummy", "max_tokens": 50, "stream": false, "stop": ["END"], "temperature": 0.5, "top_k": 4,
    "tool_choice": "required", "parallel_tool_calls": false,
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
    "messages": [
      {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
      {"role": "user", "content": "Weather in Oslo?"},
      {"role": "assistant", "content": [{"type": "text", "text": "Let me look."}],
       "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
      {"role": "tool", "tool_call_id": "toolu_1", "content": [{"type": "text", "text": "sunny"}]},
      {"role": "user", "content": [{"type": "text", "text": "And tomorrow?"}]}]})");
  CHECK(chat == expected);
  // The prompt is the one the hand-written chat request renders, and the thinking block is not in it.
  json by_hand = expected;
  by_hand["messages"][2]["content"] = "Let me look.";
  by_hand["messages"][3]["content"] = "sunny";
  by_hand["messages"][4]["content"] = "And tomorrow?";
  by_hand["messages"][0]["content"] = "Be brief.";
  const auto prompt = prompt_of(chat);
  CHECK(prompt == prompt_of(by_hand));
  const std::string text = detokenize(model(), prompt);
  CHECK(text.find("sunny") != std::string::npos);
  CHECK(text.find("And tomorrow?") != std::string::npos);
  CHECK(text.find("I should call the tool") == std::string::npos);
}

TEST_CASE("anthropic request: tool_choice, thinking and output formats", "[gateway][anthropic]") {
  json body = {{"max_tokens", 8}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
               {"tools", json::array({weather_tool})}};
  body["tool_choice"] = {{"type", "tool"}, {"name", "get_weather"}};
  CHECK(translate(body)["tool_choice"] == json({{"type", "function"}, {"function", {{"name", "get_weather"}}}}));
  CHECK_FALSE(translate(body).contains("parallel_tool_calls"));
  body["tool_choice"] = {{"type", "auto"}};
  CHECK(translate(body)["tool_choice"] == "auto");
  body["tool_choice"] = {{"type", "none"}};
  CHECK(translate(body)["tool_choice"] == "none");
  body.erase("tool_choice");

  body["thinking"] = {{"type", "enabled"}, {"budget_tokens", 1024}};
  json chat = translate(body);
  CHECK(chat["chat_template_kwargs"] == json({{"enable_thinking", true}}));
  CHECK_FALSE(chat.contains("thinking_budget"));  // the byte model has no reasoning markers
  served_model thinker = model();
  thinker.reasoning_tokens = reasoning_phase{7, 8};
  CHECK(try_translate_messages(body, thinker, messages_use::create).value()["thinking_budget"] == 1024);
  body["thinking"] = {{"type", "disabled"}};
  CHECK(translate(body)["chat_template_kwargs"] == json({{"enable_thinking", false}}));
  body["thinking"] = {{"type", "adaptive"}};
  body["chat_template_kwargs"] = {{"enable_thinking", false}, {"x", 1}};  // the client's own value wins
  CHECK(translate(body)["chat_template_kwargs"] == json({{"enable_thinking", false}, {"x", 1}}));
  body.erase("thinking");
  body.erase("chat_template_kwargs");

  body["output_config"] = {{"format", {{"type", "json_schema"}, {"schema", {{"type", "object"}}}}}, {"effort", "max"}};
  chat = translate(body);
  CHECK(chat["response_format"] == json({{"type", "json_schema"}, {"schema", {{"type", "object"}}}}));
  CHECK(chat["reasoning_effort"] == "high");
  body.erase("output_config");
  // inflight's own fields pass through; OpenAI-only ones do not.
  body["guided_regex"] = "[a-z]+";
  body["seed"] = 3;
  body["n"] = 4;
  body["stream"] = true;
  chat = translate(body);
  CHECK(chat["guided_regex"] == "[a-z]+");
  CHECK(chat["seed"] == 3);
  CHECK(chat["stream"] == true);
  CHECK_FALSE(chat.contains("n"));
  // count_tokens reads neither max_tokens nor stream.
  body.erase("max_tokens");
  chat = translate(body, messages_use::count_tokens);
  CHECK_FALSE(chat.contains("max_tokens"));
  CHECK_FALSE(chat.contains("stream"));
}

TEST_CASE("anthropic request: every refusal names the Messages field", "[gateway][anthropic]") {
  const json user = {{"role", "user"}, {"content", "hi"}};
  const json base = {{"max_tokens", 8}, {"messages", json::array({user})}};
  const auto with = [&](const char* key, const json& v) {
    json b = base;
    b[key] = v;
    return b;
  };
  const auto param_of = [&](const json& body) { return refusal(body).param; };

  json no_max = base;
  no_max.erase("max_tokens");
  CHECK(param_of(no_max) == "max_tokens");
  CHECK(refusal(no_max).message == "max_tokens is required");
  CHECK(param_of(with("max_tokens", 0)) == "max_tokens");
  CHECK(param_of(with("messages", json::array())) == "messages");
  CHECK(param_of(with("messages", json::array({{{"role", "system"}, {"content", "x"}}}))) == "messages[0].role");
  CHECK(param_of(with("messages", json::array({{{"role", "user"}}}))) == "messages[0].content");
  const json image = {{"type", "image"}, {"source", {{"type", "base64"}, {"media_type", "image/png"}, {"data", "AA=="}}}};
  const json with_image = with("messages", json::array({{{"role", "user"}, {"content", {{{"type", "text"}, {"text", "x"}}, image}}}}));
  CHECK(param_of(with_image) == "messages[0].content[1].type");
  CHECK(refusal(with_image).message.find("'image' is not supported") != std::string::npos);
  const json doc_result = {{"type", "tool_result"}, {"tool_use_id", "t"},
                           {"content", {{{"type", "document"}, {"source", json::object()}}}}};
  CHECK(param_of(with("messages", json::array({{{"role", "user"}, {"content", {doc_result}}}}))) ==
        "messages[0].content[0].content[0].type");
  const json no_id = {{"type", "tool_result"}, {"content", "x"}};
  CHECK(param_of(with("messages", json::array({{{"role", "user"}, {"content", {no_id}}}}))) ==
        "messages[0].content[0].tool_use_id");
  const json bad_input = {{"type", "tool_use"}, {"id", "t"}, {"name", "f"}, {"input", "x"}};
  CHECK(param_of(with("messages", json::array({user, {{"role", "assistant"}, {"content", {bad_input}}}}))) ==
        "messages[1].content[0].input");
  const json tool_use_in_user = {{"type", "tool_use"}, {"id", "t"}, {"name", "f"}, {"input", json::object()}};
  CHECK(param_of(with("messages", json::array({{{"role", "user"}, {"content", {tool_use_in_user}}}}))) ==
        "messages[0].content[0].type");
  CHECK(param_of(with("system", json::array({image}))) == "system[0].type");
  CHECK(param_of(with("system", 3)) == "system");

  const json server_tool = {{"type", "web_search_20250305"}, {"name", "web_search"}};
  const api_error e = refusal(with("tools", json::array({weather_tool, server_tool})));
  CHECK(e.param == "tools[1].type");
  CHECK(e.message.find("web_search_20250305") != std::string::npos);
  CHECK(param_of(with("tools", json::array({{{"name", "f"}}}))) == "tools[0].input_schema");
  CHECK(param_of(with("tool_choice", {{"type", "required"}})) == "tool_choice");
  CHECK(param_of(with("tool_choice", {{"type", "tool"}})) == "tool_choice.name");
  CHECK(param_of(with("stop_sequences", "END")) == "stop_sequences");
  CHECK(param_of(with("stop_sequences", json::array({""}))) == "stop_sequences");
  CHECK(param_of(with("thinking", {{"type", "enabled"}})) == "thinking.budget_tokens");
  CHECK(param_of(with("thinking", {{"type", "sometimes"}})) == "thinking.type");
  CHECK(param_of(with("output_config", {{"format", {{"type", "regex"}}}})) == "output_config.format");
  CHECK(param_of(with("output_config", {{"effort", "extreme"}})) == "output_config.effort");
  CHECK(param_of(with("stream", "yes")) == "stream");
}

TEST_CASE("anthropic request: chat errors come back in the Messages names", "[gateway][anthropic]") {
  json body = {{"max_tokens", 8}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  body["tools"] = json::array({{{"name", "bad name!"}, {"input_schema", {{"type", "object"}}}}});
  auto chat = try_translate_messages(body, model(), messages_use::create);
  REQUIRE(chat);
  auto parsed = try_parse_request(*chat, api_kind::chat, model());
  REQUIRE_FALSE(parsed);
  const api_error e = messages_param_error(parsed.error());
  CHECK(e.param == "tools[0].name");
  CHECK(e.message.find("tools[0].name must be") == 0);
  api_error format{400, "invalid_request_error", "response_format.schema must be an object", "response_format.schema", {}};
  CHECK(messages_param_error(format).param == "output_config.format.schema");
  CHECK(messages_param_error(format).message == "output_config.format.schema must be an object");
}

TEST_CASE("anthropic request: tools and tool_use inputs keep the client's key order", "[gateway][anthropic]") {
  const std::string text = R"({"max_tokens": 8, "tools": [{"input_schema": {"type": "object",
      "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}}, "description": "d", "name": "w"}],
    "messages": [{"role": "user", "content": "hi"},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "w", "input": {"zeta": "z", "alpha": 1}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]})";
  auto chat = try_translate_messages(parse_ordered_body(text), model(), messages_use::create);
  REQUIRE(chat.has_value());
  // OpenAI's order for the wrapper, the client's inside the schema (sorted: alpha first).
  CHECK((*chat)["tools"].dump() ==
        R"([{"type":"function","function":{"name":"w","description":"d","parameters":{"type":"object",)"
        R"("properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}}}}])");
  CHECK((*chat)["messages"][1]["tool_calls"][0]["function"]["arguments"] == R"({"zeta":"z","alpha":1})");
}

TEST_CASE("anthropic request: a final assistant turn is a prefill the answer continues", "[gateway][anthropic]") {
  const json body = {{"max_tokens", 8},
                     {"messages", json::array({{{"role", "user"}, {"content", "Name a colour."}},
                                               {{"role", "assistant"}, {"content", "The colour is"}}})}};
  const json chat = translate(body);
  CHECK(chat["continue_final_message"] == true);
  const std::string text = detokenize(model(), prompt_of(chat));
  CHECK(text.ends_with("The colour is"));  // no end of turn, no new assistant header
  // A final user turn (or the client's own choice) is left alone.
  json asked = body;
  asked["messages"].erase(1);
  CHECK_FALSE(translate(asked).contains("continue_final_message"));
  json own = body;
  own["continue_final_message"] = false;
  CHECK(translate(own)["continue_final_message"] == false);
}

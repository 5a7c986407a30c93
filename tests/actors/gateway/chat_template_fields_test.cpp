// What a chat request hands its template (actors/gateway/chat_request): the request's key
// order in tools, tool-call arguments and message fields; chat_template_kwargs,
// reasoning_effort, a request's own chat_template and continue_final_message; /tokenize
// rendering exactly what chat completions render; template errors as 400s. A byte-level
// tokenizer (token = byte + 3), so a prompt's ids decode back to the rendered text.
#include <catch2/catch.hpp>

#include "actors/gateway/chat_request.hpp"
#include "actors/gateway/constraint_request.hpp"
#include "actors/gateway/openai_request.hpp"
#include "actors/gateway/tool_request.hpp"
#include "tests/actors/gateway/byte_model.hpp"

using namespace inflight;
using namespace inflight::gateway;
using nlohmann::json;

namespace {

served_model model_with(const char* source) {
  auto m = test::byte_model({.max_context = 8192});
  auto t = chat_template::try_from_jinja(source);
  if (!t) FAIL("template: " << t.error().message);
  m.chat = *t;
  return m;
}

/// A chat body as a client sends it: parsed twice, as the HTTP session does.
api_result<openai_request> parse_text(const served_model& m, const std::string& text) {
  return try_parse_request(json::parse(text), api_kind::chat, m, parse_ordered_body(text));
}

std::string prompt_of(const served_model& m, const std::string& text) {
  auto r = parse_text(m, text);
  if (!r) FAIL("400: " << r.error().message << " (" << r.error().param << ")");
  return detokenize(m, r->prompts.at(0));
}

const char* hello = R"("messages": [{"role": "user", "content": "Hi"}])";

}  // namespace

TEST_CASE("chat template input: tools, arguments and message fields keep the request's key order",
          "[gateway][protocol][template]") {
  const auto m = model_with(
      "{{ tools | tojson }}|{% for k in messages[1] %}{{ k }},{% endfor %}|"
      "{{ messages[1].tool_calls[0].function.arguments | tojson }}");
  const std::string body = R"({"tools": [{"type": "function", "function": {"name": "w", "parameters":
      {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}}}}],
    "messages": [{"role": "user", "content": "Hi"},
      {"tool_calls": [{"type": "function", "id": "c1", "function": {"name": "w", "arguments": "{\"zeta\": \"z\", \"alpha\": 1}"}}],
       "role": "assistant", "content": null}]})";
  // nlohmann::json would have sorted every one of these: alpha before zeta, content before role
  CHECK(prompt_of(m, body) ==
        R"([{"type": "function", "function": {"name": "w", "parameters": {"type": "object", "properties": )"
        R"({"zeta": {"type": "string"}, "alpha": {"type": "integer"}}}}}]|tool_calls,role,content,|)"
        R"({"zeta": "z", "alpha": 1})");
}

TEST_CASE("chat template input: chat_template_kwargs and reasoning_effort are template variables",
          "[gateway][protocol][template]") {
  const auto m = model_with("{{ enable_thinking }}/{{ reasoning_effort }}/{{ budget | tojson }}");
  CHECK(prompt_of(m, std::string("{") + hello + R"(, "chat_template_kwargs": {"enable_thinking": false,
        "budget": {"b": 2, "a": 1}}, "reasoning_effort": "high"})") == R"(False/high/{"b": 2, "a": 1})");
  // Without them the variables are undefined, as in transformers.
  const auto plain = model_with("[{{ enable_thinking }}{{ reasoning_effort }}]{{ enable_thinking is defined }}");
  CHECK(prompt_of(plain, std::string("{") + hello + "}") == "[]False");

  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"("chat_template_kwargs": {"messages": []})", "chat_template_kwargs.messages"},
      {R"("chat_template_kwargs": {"tools": null})", "chat_template_kwargs.tools"},
      {R"("chat_template_kwargs": [1])", "chat_template_kwargs"},
      {R"("chat_template_kwargs": "enable_thinking")", "chat_template_kwargs"},
      {R"("reasoning_effort": "extreme")", "reasoning_effort"},
      {R"("reasoning_effort": 3)", "reasoning_effort"},
  };
  for (const auto& [field, param] : bad) {
    INFO(field);
    auto r = parse_text(m, std::string("{") + hello + ", " + field + "}");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().status == 400);
    CHECK(r.error().param == param);
  }
}

TEST_CASE("chat template input: a request's chat_template renders instead of the model's",
          "[gateway][protocol][template]") {
  const auto m = model_with("model:{{ messages[0].content }}");
  CHECK(prompt_of(m, std::string("{") + hello + "}") == "model:Hi");
  CHECK(prompt_of(m, std::string("{") + hello + R"(, "chat_template": "own:{{ messages[0].content | upper }}"})") ==
        "own:HI");
  auto unparsable = parse_text(m, std::string("{") + hello + R"(, "chat_template": "{% for %}"})");
  REQUIRE_FALSE(unparsable.has_value());
  CHECK(unparsable.error().status == 400);
  CHECK(unparsable.error().param == "chat_template");
  CHECK_THAT(unparsable.error().message, Catch::Contains("chat_template does not parse: template line 1"));
  auto raising = parse_text(m, std::string("{") + hello + R"(, "chat_template": "{{ raise_exception('no users here') }}"})");
  REQUIRE_FALSE(raising.has_value());
  CHECK(raising.error().status == 400);
  CHECK(raising.error().param == "chat_template");
  CHECK_THAT(raising.error().message, Catch::Contains("no users here"));
  auto empty = parse_text(m, std::string("{") + hello + R"(, "chat_template": ""})");
  REQUIRE_FALSE(empty.has_value());
  CHECK(empty.error().param == "chat_template");
}

TEST_CASE("chat template input: the model template's raise_exception is a 400 naming messages",
          "[gateway][protocol][template]") {
  const auto m = model_with(
      "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}ok");
  auto r = parse_text(m, R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]})");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().status == 400);
  CHECK(r.error().param == "messages");
  CHECK_THAT(r.error().message, Catch::Contains("System role not supported"));
}

TEST_CASE("chat template input: continue_final_message ends the prompt inside the final message",
          "[gateway][protocol][template]") {
  const auto m = model_with(
      "{% for m in messages %}<{{ m.role }}>{{ m.content }}</s>{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}");
  const std::string conversation =
      R"("messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello, I am "}])";
  CHECK(prompt_of(m, "{" + conversation + "}") == "<user>Hi</s><assistant>Hello, I am </s><assistant>");
  CHECK(prompt_of(m, "{" + conversation + R"(, "continue_final_message": true})") ==
        "<user>Hi</s><assistant>Hello, I am");
  auto both = parse_text(m, "{" + conversation + R"(, "continue_final_message": true, "add_generation_prompt": true})");
  REQUIRE_FALSE(both.has_value());
  CHECK(both.error().param == "continue_final_message");
}

TEST_CASE("chat template input: /tokenize with messages renders exactly what chat completions render",
          "[gateway][protocol][template]") {
  const auto m = model_with(
      "{% if tools %}{{ tools | tojson }}{% endif %}{% for m in messages %}<{{ m.role }}>{{ m.content }}"
      "{% for c in m.tool_calls or [] %}{{ c.function.arguments | tojson }}{% endfor %}{% endfor %}"
      "{{ enable_thinking }}{% if add_generation_prompt %}<assistant>{% endif %}");
  const std::string body = R"({"tools": [{"type": "function", "function": {"name": "w", "parameters":
      {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "string"}}}}}],
    "tool_choice": "auto", "chat_template_kwargs": {"enable_thinking": true}, "add_generation_prompt": false,
    "messages": [{"role": "user", "content": "Hi"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "w", "arguments": "{\"zeta\": \"z\", \"alpha\": \"a\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "done"}]})";
  auto chat = parse_text(m, body);
  REQUIRE(chat.has_value());
  auto tokenized = try_parse_tokenize(json::parse(body), m, parse_ordered_body(body));
  REQUIRE(tokenized.has_value());
  CHECK(*tokenized == chat->prompts.at(0));
  const std::string text = detokenize(m, *tokenized);
  CHECK(text.starts_with(R"([{"type": "function", "function": {"name": "w", "parameters": {"type": "object", )"
                         R"("properties": {"zeta": )"));
  CHECK(text.ends_with(R"(<assistant>None{"zeta": "z", "alpha": "a"}<tool>doneTrue)"));
}

TEST_CASE("key order: a schema's property order reaches its grammar, from every field that carries one",
          "[gateway][protocol][structured]") {
  // A schema's property order is the order constrained output writes them in, so the
  // grammar must see the client's order; the sorted parse would put alpha first.
  const std::string schema = R"({"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}},
                                 "required": ["zeta", "alpha"]})";
  const std::string ordered_schema = nlohmann::ordered_json::parse(schema).dump();
  REQUIRE(ordered_schema != json::parse(schema).dump());
  for (const std::string& field : {R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": )" + schema + "}}",
                                   R"("response_format": {"type": "json_object", "schema": )" + schema + "}",
                                   R"("structured_outputs": {"json": )" + schema + "}",
                                   R"("guided_json": )" + schema, R"("json_schema": )" + schema}) {
    const std::string text = "{" + field + "}";
    auto c = try_parse_constraint(json::parse(text), parse_ordered_body(text));
    REQUIRE(c.has_value());
    REQUIRE(c->has_value());
    CHECK((*c)->spec.text == ordered_schema);
    // Without the ordered body (a caller that has none), the sorted order: still a schema.
    auto sorted = try_parse_constraint(json::parse(text));
    CHECK((*sorted)->spec.text == json::parse(schema).dump());
  }
  const std::string tools = R"({"tools": [{"type": "function", "function": {"name": "w", "parameters": )" + schema + "}}]}";
  auto t = try_parse_tools(json::parse(tools), parse_ordered_body(tools));
  REQUIRE(t.has_value());
  CHECK(t->functions.at(0).parameters.dump() == ordered_schema);
  CHECK(t->definitions.dump().find(R"({"type":"function","function":{"name":"w","parameters":)" + ordered_schema) == 1);
}

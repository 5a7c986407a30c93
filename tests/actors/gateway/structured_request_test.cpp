// Structured outputs, logit_bias and tools in request bodies, without sockets
// (actors/gateway/constraint_request, tool_request): every alias compiles to the grammar
// it names (the same cached index), every refusal is a 400 naming its field, and tools
// and tool calls reach the chat template. A byte-level tokenizer (token = byte + 3).
#include <catch2/catch.hpp>

#include "actors/gateway/openai_request.hpp"
#include "actors/gateway/ws_message.hpp"
#include "tests/actors/gateway/byte_model.hpp"

using namespace inflight;
using namespace inflight::gateway;
using nlohmann::json;

namespace {

served_model byte_model() { return test::byte_model({.max_context = 8192}); }

const char* person = R"({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})";

std::string dumped(const char* text) { return json::parse(text).dump(); }

/// `extra` (JSON object text) merged into a chat body with one user message.
json chat_body(const std::string& extra) {
  json body = json::parse(extra);
  body["messages"] = json::array({{{"role", "user"}, {"content", "Hi"}}});
  return body;
}

api_result<openai_request> parse(const served_model& m, const json& body, api_kind kind = api_kind::chat) {
  return try_parse_request(body, kind, m);
}

std::string prompt_text(const served_model& m, const openai_request& r) { return detokenize(m, r.prompts.at(0)); }

const char* weather_tools = R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time"}}])";

}  // namespace

TEST_CASE("structured outputs: every alias compiles to the grammar it names", "[gateway][protocol][structured]") {
  auto m = byte_model();
  const std::string schema = dumped(person);
  const std::string any_object = R"({"type":"object"})";
  struct alias_case {
    std::string body;
    grammar_spec spec;
  };
  const std::vector<alias_case> cases = {
      {R"({"response_format": {"type": "json_object"}})", {grammar_kind::json_schema, any_object}},
      {std::string(R"({"response_format": {"type": "json_schema", "json_schema": {"name": "p", "strict": true, "schema": )") +
           person + "}}}",
       {grammar_kind::json_schema, schema}},
      {std::string(R"({"response_format": {"type": "json_schema", "schema": )") + person + "}}",
       {grammar_kind::json_schema, schema}},  // llama.cpp server
      {std::string(R"({"response_format": {"type": "json_object", "schema": )") + person + "}}",
       {grammar_kind::json_schema, schema}},
      {std::string(R"({"structured_outputs": {"json": )") + person + "}}", {grammar_kind::json_schema, schema}},
      {R"({"structured_outputs": {"json": "{\"type\": \"integer\"}"}})", {grammar_kind::json_schema, R"({"type": "integer"})"}},
      {R"({"structured_outputs": {"regex": "[a-z]+"}})", {grammar_kind::regex, "[a-z]+"}},
      {R"({"structured_outputs": {"choice": ["yes", "no"]}})", {grammar_kind::choice, R"(["yes","no"])"}},
      {R"({"structured_outputs": {"grammar": "root ::= \"x\""}})", {grammar_kind::gbnf, "root ::= \"x\""}},
      {R"({"structured_outputs": {"json_object": true}})", {grammar_kind::json_schema, any_object}},
      {std::string(R"({"guided_json": )") + person + "}", {grammar_kind::json_schema, schema}},
      {R"({"guided_regex": "\\d{3}"})", {grammar_kind::regex, "\\d{3}"}},
      {R"({"guided_choice": ["a", "b"]})", {grammar_kind::choice, R"(["a","b"])"}},
      {R"({"guided_grammar": "root ::= [ab]+"})", {grammar_kind::gbnf, "root ::= [ab]+"}},
      {std::string(R"({"json_schema": )") + person + "}", {grammar_kind::json_schema, schema}},  // llama.cpp
      {R"({"grammar": "root ::= \"y\""})", {grammar_kind::gbnf, "root ::= \"y\""}},
  };
  for (const auto& c : cases) {
    INFO(c.body);
    for (api_kind kind : {api_kind::chat, api_kind::completion}) {
      json body = chat_body(c.body);
      if (kind == api_kind::completion) {
        body.erase("messages");
        body["prompt"] = "Hi";
      }
      auto r = parse(m, body, kind);
      REQUIRE(r.has_value());
      REQUIRE(r->base.params.grammar != nullptr);
      auto expected = m.grammars->try_get(c.spec);
      REQUIRE(expected.has_value());
      CHECK(r->base.params.grammar == *expected);  // the same compiled index: the spec was this one
      CHECK(r->choice_request(0).params.grammar == *expected);
    }
  }
  auto text = parse(m, chat_body(R"({"response_format": {"type": "text"}, "structured_outputs": {"json_object": false}})"));
  REQUIRE(text.has_value());
  CHECK(text->base.params.grammar == nullptr);
  // The same schema again is a cache hit: compiled once.
  const auto misses = m.grammars->num_misses();
  REQUIRE(parse(m, chat_body(std::string(R"({"guided_json": )") + person + "}")).has_value());
  CHECK(m.grammars->num_misses() == misses);
}

TEST_CASE("structured outputs: refusals are 400s naming the field", "[gateway][protocol][structured]") {
  const auto m = byte_model();
  struct bad {
    std::string body;
    std::string param;
    std::string in_message;
  };
  const std::vector<bad> cases = {
      {R"({"response_format": {"type": "json_object"}, "guided_regex": "a"})", "guided_regex", "one constraint"},
      {R"({"guided_json": {}, "grammar": "root ::= \"x\""})", "grammar", "guided_json and grammar"},
      {R"({"structured_outputs": {"regex": "a", "choice": ["a"]}})", "structured_outputs", "one of"},
      {R"({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object",
          "properties": {"a": {"type": "array", "contains": {}}}}}}})",
       "response_format", "'contains' at /properties/a"},
      {R"({"guided_json": {"type": "array", "unevaluatedItems": false}})", "guided_json", "'unevaluatedItems' at /"},
      {R"({"structured_outputs": {"json": {"not": {}}}})", "structured_outputs.json", "'not'"},
      {R"({"response_format": "json"})", "response_format", "object with a type"},
      {R"({"response_format": {"type": "xml"}})", "response_format.type", "\"xml\""},
      {R"({"response_format": {"type": "json_schema"}})", "response_format.json_schema", "required"},
      {R"({"response_format": {"type": "json_schema", "json_schema": {"schema": 5}}})", "response_format.json_schema.schema",
       "JSON Schema"},
      {R"({"response_format": {"type": "json_schema", "json_schema": {"name": 1, "schema": {}}}})",
       "response_format.json_schema.name", "string"},
      {R"({"response_format": {"type": "json_schema", "json_schema": {"strict": "yes", "schema": {}}}})",
       "response_format.json_schema.strict", "boolean"},
      {R"({"guided_choice": []})", "guided_choice", "non-empty list"},
      {R"({"guided_choice": ["a", 1]})", "guided_choice", "list of strings"},
      {R"({"guided_regex": ""})", "guided_regex", "non-empty"},
      {R"({"guided_regex": "(a"})", "guided_regex", "guided_regex: "},
      {R"({"guided_regex": "(?=a)b"})", "guided_regex", "lookaround"},
      {R"({"grammar": "root ::= undefined_rule"})", "grammar", "undefined_rule"},
      {R"({"guided_json": "not a schema"})", "guided_json", "JSON Schema"},
      {R"({"structured_outputs": {"structural_tag": "{}"}})", "structured_outputs.structural_tag", "not supported"},
      {R"({"structured_outputs": {"json_object": 1}})", "structured_outputs.json_object", "boolean"},
      {R"({"logit_bias": [1]})", "logit_bias", "object"},
      {R"({"logit_bias": {"abc": 1}})", "logit_bias", "\"abc\""},
      {R"({"logit_bias": {"1.5": 1}})", "logit_bias", "integers"},
      {R"({"logit_bias": {"-1": 1}})", "logit_bias", "outside the vocabulary"},
      {R"({"logit_bias": {"259": 1}})", "logit_bias", "outside the vocabulary [0, 259)"},
      {R"({"logit_bias": {"5": 100.5}})", "logit_bias", "[-100, 100]"},
      {R"({"logit_bias": {"5": -101}})", "logit_bias", "[-100, 100]"},
      {R"({"logit_bias": {"5": "1"}})", "logit_bias", "number"},
  };
  for (const auto& c : cases) {
    INFO(c.body);
    auto r = parse(m, chat_body(c.body));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().status == 400);
    CHECK(r.error().type == "invalid_request_error");
    CHECK(r.error().param == c.param);
    CHECK(r.error().message.find(c.in_message) != std::string::npos);
  }
}

TEST_CASE("structured outputs: logit_bias entries, and the WebSocket generate message", "[gateway][protocol][structured]") {
  const auto m = byte_model();
  auto r = parse(m, chat_body(R"({"logit_bias": {"10": -100, "5": 2.5, "258": 100}})"));
  REQUIRE(r.has_value());
  const std::vector<logit_bias_entry> expected = {{5, 2.5f}, {10, -100.0f}, {258, 100.0f}};
  CHECK(r->base.params.logit_bias == expected);

  auto ws = try_parse_ws_generate(json::parse(R"({"prompt": "Hi", "guided_choice": ["yes", "no"], "logit_bias": {"7": 1}})"), m);
  REQUIRE(ws.has_value());
  CHECK(ws->base.params.grammar == *m.grammars->try_get({grammar_kind::choice, R"(["yes","no"])"}));
  CHECK(ws->base.params.logit_bias == std::vector<logit_bias_entry>{{7, 1.0f}});
  auto ws_bad = try_parse_ws_generate(json::parse(R"({"prompt": "Hi", "response_format": {"type": "json_schema",
      "json_schema": {"schema": {"type": "object", "unevaluatedProperties": false}}}})"), m);
  REQUIRE_FALSE(ws_bad.has_value());
  CHECK(ws_bad.error().param == "response_format");
  CHECK(ws_bad.error().message.find("'unevaluatedProperties'") != std::string::npos);
  auto ws_tools = try_parse_ws_generate(
      json::parse(R"({"messages": [{"role": "user", "content": "Hi"}], "tools": [{"type": "function",
                     "function": {"name": "f"}}]})"), m);
  // A chat generate takes tools, as /v1/chat/completions does.
  REQUIRE(ws_tools.has_value());
  CHECK(ws_tools->tools.functions.size() == 1);
  CHECK(ws_tools->tools.parses_output());
}

TEST_CASE("tools: tool_choice modes and the grammar of forced calls", "[gateway][protocol][tools]") {
  const auto m = byte_model();
  const std::string tools = std::string(R"({"tools": )") + weather_tools;

  auto automatic = parse(m, chat_body(tools + "}"));
  REQUIRE(automatic.has_value());
  CHECK(automatic->tools.functions.size() == 2);
  CHECK(automatic->tools.mode == tool_choice_mode::automatic);
  CHECK(automatic->tools.parses_output());
  CHECK(automatic->base.params.grammar == nullptr);  // auto leaves the model free
  CHECK(automatic->tools.functions[0].parameters["required"] == json::array({"city"}));

  auto none = parse(m, chat_body(tools + R"(, "tool_choice": "none"})"));
  REQUIRE(none.has_value());
  CHECK_FALSE(none->tools.parses_output());
  CHECK(none->base.params.grammar == nullptr);
  // The tools are in the prompt either way (the plain fallback: a system turn).
  CHECK(prompt_text(m, *none).find("\"name\":\"get_weather\"") != std::string::npos);
  CHECK(prompt_text(m, *none) == prompt_text(m, *automatic));

  auto required = parse(m, chat_body(tools + R"(, "tool_choice": "required"})"));
  REQUIRE(required.has_value());
  CHECK(required->tools.is_forced());
  auto all_calls = m.grammars->try_get(tool_call_grammar(tool_call_format::json, required->tools.functions, true));
  REQUIRE(all_calls.has_value());
  CHECK(required->base.params.grammar == *all_calls);

  auto one = parse(m, chat_body(tools + R"(, "tool_choice": "required", "parallel_tool_calls": false})"));
  REQUIRE(one.has_value());
  CHECK(one->base.params.grammar == *m.grammars->try_get(tool_call_grammar(tool_call_format::json, one->tools.functions, false)));

  auto named = parse(m, chat_body(tools + R"(, "tool_choice": {"type": "function", "function": {"name": "get_time"}}})"));
  REQUIRE(named.has_value());
  CHECK(named->tools.mode == tool_choice_mode::named);
  const std::vector<tool_function> just_time = {named->tools.functions[1]};
  CHECK(named->base.params.grammar == *m.grammars->try_get(tool_call_grammar(tool_call_format::json, just_time, false)));

  // Tools are a chat feature: /v1/completions ignores them.
  json completion = json::parse(tools + R"(, "tool_choice": "required", "prompt": "Hi"})");
  auto plain = parse(m, completion, api_kind::completion);
  REQUIRE(plain.has_value());
  CHECK(plain->base.params.grammar == nullptr);
}

TEST_CASE("tools: refusals are 400s naming the field", "[gateway][protocol][tools]") {
  const auto m = byte_model();
  const std::string tools = std::string(R"({"tools": )") + weather_tools;
  struct bad {
    std::string body;
    std::string param;
    std::string in_message;
  };
  const std::vector<bad> cases = {
      {R"({"tools": "get_weather"})", "tools", "list"},
      {R"({"tools": [{"type": "retrieval"}]})", "tools[0].type", "function"},
      {R"({"tools": [{"type": "function"}]})", "tools[0].function", "object"},
      {R"({"tools": [{"type": "function", "function": {"name": "a b"}}]})", "tools[0].function.name", "letters"},
      {R"({"tools": [{"type": "function", "function": {}}]})", "tools[0].function.name", "letters"},
      {R"({"tools": [{"type": "function", "function": {"name": "f", "description": 3}}]})", "tools[0].function.description", "string"},
      {R"({"tools": [{"type": "function", "function": {"name": "f", "parameters": []}}]})", "tools[0].function.parameters", "object"},
      {R"({"tools": [{"type": "function", "function": {"name": "f", "strict": 1}}]})", "tools[0].function.strict", "boolean"},
      {R"({"tools": [{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}]})",
       "tools[1].function.name", "twice"},
      {tools + R"(, "tool_choice": "sometimes"})", "tool_choice", "\"required\""},
      {tools + R"(, "tool_choice": {"type": "function"}})", "tool_choice", "\"required\""},
      {tools + R"(, "tool_choice": {"type": "function", "function": {"name": "get_news"}}})", "tool_choice", "get_news"},
      {R"({"tool_choice": "required"})", "tool_choice", "needs tools"},
      {tools + R"(, "parallel_tool_calls": "yes"})", "parallel_tool_calls", "boolean"},
      {tools + R"(, "tool_choice": "required", "response_format": {"type": "json_object"}})", "response_format",
       "tool_choice forces"},
      {R"({"tool_choice": "required", "tools": [{"type": "function", "function": {"name": "f", "parameters":
          {"type": "object", "properties": {"when": {"type": "array", "contains": {}}}}}}]})",
       "tools[0].function.parameters", "at /properties/when"},
  };
  for (const auto& c : cases) {
    INFO(c.body);
    auto r = parse(m, chat_body(c.body));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().status == 400);
    CHECK(r.error().param == c.param);
    CHECK(r.error().message.find(c.in_message) != std::string::npos);
  }
  // tool_choice "auto" or "none" without tools is fine (as OpenAI's SDKs send it).
  CHECK(parse(m, chat_body(R"({"tool_choice": "auto"})")).has_value());
}

TEST_CASE("tools: tools, assistant tool_calls and tool results reach the model's template", "[gateway][protocol][tools]") {
  auto m = byte_model();
  auto t = chat_template::try_from_jinja(R"({%- if tools %}[tools:{% for t in tools %}{{ t.function.name }};{% endfor %}]{% endif %}
{%- for message in messages %}
  {%- if message.tool_calls %}<calls>{% for c in message.tool_calls %}{{ c.function.name }}({{ c.function.arguments.city }}){% endfor %}
  {%- elif message.role == "tool" %}<result id={{ message.tool_call_id }}>{{ message.content }}
  {%- else %}<{{ message.role }}>{{ message.content }}{% endif %}
{%- endfor %})");
  REQUIRE(t.has_value());
  m.chat = *t;
  json body = json::parse(std::string(R"({"tools": )") + weather_tools + "}");
  body["messages"] = json::parse(R"([
      {"role": "developer", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Weather in "}, {"type": "text", "text": "Oslo?"}]},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
          "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "12 C"}])");
  auto r = parse(m, body);
  REQUIRE(r.has_value());
  CHECK(prompt_text(m, *r) ==
        "[tools:get_weather;get_time;]<system>Be brief.<user>Weather in Oslo?<calls>get_weather(Oslo)<result id=c1>12 C");
}

TEST_CASE("tools: a template that knows no tools gets them written into its messages", "[gateway][protocol][tools]") {
  auto m = byte_model();
  m.chat = *chat_template::try_from_jinja("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}");
  m.is_tool_template = false;
  m.tool_style = tool_style_for("jinja", tool_call_format::json);  // as try_make_served_model sets it
  json body = json::parse(std::string(R"({"tools": )") + weather_tools + "}");
  body["messages"] = json::parse(R"([
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
          "function": {"name": "get_time", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "noon"}])");
  auto r = parse(m, body);
  REQUIRE(r.has_value());
  const std::string text = prompt_text(m, *r);
  CHECK(text.starts_with("<system>You can call these functions:\n{\"function\":{\"description\":\"Weather\""));
  INFO(text);
  CHECK(text.ends_with("<user>Weather?<assistant>{\"name\": \"get_time\", \"arguments\": {}}<user>noon"));
  // Without tools or calls the messages go to the template as they are.
  json plain = json::parse(R"({"messages": [{"role": "user", "content": "Hi"}]})");
  auto p = parse(m, plain);
  REQUIRE(p.has_value());
  CHECK(prompt_text(m, *p) == "<user>Hi");
}

TEST_CASE("tools: the built-in renderers write tools and calls in the model's syntax", "[gateway][protocol][tools]") {
  auto m = byte_model();
  m.chat = *chat_template::try_from_name("chatml");
  m.tool_style = tool_style_for("chatml", tool_call_format::hermes);
  json body = json::parse(std::string(R"({"tools": )") + weather_tools + "}");
  body["messages"] = json::parse(R"([
      {"role": "user", "content": "Weather in Oslo?"},
      {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
          "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "12 C"}])");
  auto r = parse(m, body);
  REQUIRE(r.has_value());
  const std::string text = prompt_text(m, *r);
  CHECK(text.starts_with("<|im_start|>system\n# Tools\n"));
  CHECK(text.find("<tools>\n{\"function\":{\"description\":\"Weather\",\"name\":\"get_weather\"") != std::string::npos);
  CHECK(text.find("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\"}}\n"
                  "</tool_call><|im_end|>") != std::string::npos);
  CHECK(text.find("<|im_start|>user\n<tool_response>\n12 C\n</tool_response><|im_end|>") != std::string::npos);
  CHECK(text.ends_with("<|im_start|>assistant\n"));
}

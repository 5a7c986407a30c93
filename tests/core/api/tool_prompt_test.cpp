// Tools on the way in (core/api/tool_prompt): the grammar that forces calls in each
// family's syntax (what it accepts and refuses, and that what it accepts parses back),
// and conversations with tools flattened for the built-in renderers.
#include <catch2/catch.hpp>

#include "core/api/tool_calls.hpp"
#include "core/api/tool_prompt.hpp"
#include "core/grammar/earley.hpp"

using namespace inflight;
using ojson = nlohmann::ordered_json;

namespace {

std::vector<tool_function> weather_tools() {
  return {{"get_weather", "The weather in a city",
           ojson::parse(R"({"type": "object", "properties": {"city": {"type": "string"},
                           "unit": {"enum": ["c", "f"]}}, "required": ["city"]})")},
          {"get_time", "", nullptr}};
}

bool accepts(const grammar& g, std::string_view text) {
  earley_parser p(g);
  p.start_at_root();
  for (char c : text)
    if (!p.try_advance(static_cast<std::uint8_t>(c))) return false;
  return p.can_finish();
}

grammar compiled(const grammar_spec& spec) {
  auto g = try_compile(spec);
  if (!g) FAIL(g.error().message);
  return std::move(*g);
}

}  // namespace

TEST_CASE("tool prompt: the forced-call grammar of each format", "[chat][tools][grammar]") {
  const auto tools = weather_tools();
  const std::string paris = R"({"name":"get_weather","arguments":{"city":"Paris"}})";
  const std::string time = R"({"name":"get_time","arguments":{}})";

  const auto hermes_one = compiled(tool_call_grammar(tool_call_format::hermes, tools, false));
  const std::string block = "<tool_call>\n" + paris + "\n</tool_call>";
  CHECK(accepts(hermes_one, block));
  CHECK(accepts(hermes_one, "<tool_call>\n" + time + "\n</tool_call>"));
  CHECK_FALSE(accepts(hermes_one, paris));                                  // the tags are part of it
  CHECK_FALSE(accepts(hermes_one, block + "\n" + block));                   // one call only
  CHECK_FALSE(accepts(hermes_one, R"(<tool_call>
{"name":"get_weather","arguments":{"unit":"c"}}
</tool_call>)"));                                                            // city is required
  CHECK_FALSE(accepts(hermes_one, R"(<tool_call>
{"name":"get_wether","arguments":{"city":"Paris"}}
</tool_call>)"));                                                            // no such function
  const auto hermes_many = compiled(tool_call_grammar(tool_call_format::hermes, tools, true));
  CHECK(accepts(hermes_many, block + "\n" + block));
  CHECK_FALSE(accepts(hermes_many, ""));
  const auto parsed = parse_tool_calls(tool_call_format::hermes, block + "\n" + block);
  REQUIRE(parsed.calls.size() == 2);
  CHECK(parsed.calls[0] == tool_call{"get_weather", R"({"city":"Paris"})"});

  const auto llama = compiled(tool_call_grammar(tool_call_format::llama3_json, tools, true));
  const std::string llama_call = R"({"name":"get_weather","parameters":{"city":"Oslo","unit":"f"}})";
  CHECK(accepts(llama, llama_call));
  CHECK(accepts(llama, llama_call + "; " + R"({"name":"get_time","parameters":{}})"));
  CHECK_FALSE(accepts(llama, paris));  // "arguments" is not Llama's key
  CHECK(parse_tool_calls(tool_call_format::llama3_json, llama_call).calls.size() == 1);

  const auto json_one = compiled(tool_call_grammar(tool_call_format::json, tools, false));
  CHECK(accepts(json_one, paris));
  CHECK_FALSE(accepts(json_one, "[" + paris + "]"));
  const auto json_many = compiled(tool_call_grammar(tool_call_format::json, tools, true));
  CHECK(accepts(json_many, "[" + paris + "," + time + "]"));
  CHECK_FALSE(accepts(json_many, "[]"));
  CHECK(parse_tool_calls(tool_call_format::json, "[" + paris + "," + time + "]").calls.size() == 2);
}

TEST_CASE("tool prompt: local references of a parameters schema still resolve", "[chat][tools][grammar]") {
  std::vector<tool_function> tools = {
      {"add", "", ojson::parse(R"({"type": "object", "$defs": {"n": {"type": "integer"}},
                                   "properties": {"a": {"$ref": "#/$defs/n"}}, "required": ["a"]})")},
      {"neg", "", ojson::parse(R"({"type": "object", "definitions": {"n": {"type": "integer"}},
                                   "properties": {"x": {"$ref": "#/definitions/n"}}, "required": ["x"]})")}};
  for (auto format : {tool_call_format::hermes, tool_call_format::json}) {
    const auto g = compiled(tool_call_grammar(format, tools, true));
    const std::string add = R"({"name":"add","arguments":{"a":3}})";
    const std::string bad = R"({"name":"add","arguments":{"a":"3"}})";
    if (format == tool_call_format::json) {
      CHECK(accepts(g, "[" + add + "]"));
      CHECK_FALSE(accepts(g, "[" + bad + "]"));
    } else {
      CHECK(accepts(g, "<tool_call>\n" + add + "\n</tool_call>"));
      CHECK_FALSE(accepts(g, "<tool_call>\n" + bad + "\n</tool_call>"));
    }
  }
}

TEST_CASE("tool prompt: tools and calls flattened for the built-in renderers", "[chat][tools][template]") {
  chat_input in;
  in.messages = ojson::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Oslo and Rome?"},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
      {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "12 C"},
    {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "25 C"}]}])");
  in.tools = ojson::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters": {}}}])");

  const auto chatml = flatten_tool_conversation(in, tool_style_for("chatml", tool_call_format::hermes));
  REQUIRE(chatml.size() == 4);  // the two results are one user turn
  CHECK(chatml[0].role == "system");
  CHECK(chatml[0].content.starts_with("Be brief.\n\n# Tools"));
  CHECK(chatml[0].content.find(R"({"type":"function","function":{"name":"get_weather","parameters":{}}})") !=
        std::string::npos);
  CHECK(chatml[2].content ==
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\"}}\n</tool_call>\n"
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>");
  CHECK(chatml[3].role == "user");
  CHECK(chatml[3].content == "<tool_response>\n12 C\n</tool_response>\n<tool_response>\n25 C\n</tool_response>");
  // What the model wrote before parses back as the same calls.
  CHECK(parse_tool_calls(tool_call_format::hermes, chatml[2].content).calls.size() == 2);

  const auto qwen3 = flatten_tool_conversation(in, tool_style_for("qwen3", tool_call_format::hermes));
  REQUIRE(qwen3.size() == 5);
  CHECK(qwen3[3].role == "tool");  // the qwen3 renderer wraps results itself
  CHECK(qwen3[3].content == "12 C");

  const auto llama = flatten_tool_conversation(in, tool_style_for("llama-3", tool_call_format::llama3_json));
  CHECK(llama[2].content == R"({"name": "get_weather", "parameters": {"city":"Oslo"}}; )"
                            R"({"name": "get_weather", "parameters": {"city": "Rome"}})");
  CHECK(llama[3].role == "ipython");

  const auto mistral = flatten_tool_conversation(in, tool_style_for("mistral", tool_call_format::json));
  CHECK(mistral[0].role == "system");  // the conversation's own system message stays first
  CHECK(mistral[1].role == "user");
  CHECK(mistral[1].content.starts_with("You can call these functions:"));
  CHECK(mistral[2].content.starts_with("[{\"name\": \"get_weather\""));

  // No tools, no calls: the turns are the messages' roles and texts.
  chat_input plain;
  plain.messages = ojson::parse(R"([{"role": "user", "content": "Hi"}])");
  const auto turns = flatten_tool_conversation(plain, tool_style_for("plain", tool_call_format::json));
  REQUIRE(turns.size() == 1);
  CHECK(turns[0].role == "user");
  CHECK(turns[0].content == "Hi");
}

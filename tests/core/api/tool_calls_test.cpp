// Tool calls read from model output (core/api/tool_calls, tool_call_stream): every
// family's syntax, malformed output as text, several calls, and streaming that sends the
// same calls and content whatever the text's cut points.
#include <catch2/catch.hpp>

#include <random>

#include "core/api/tool_call_stream.hpp"
#include "core/api/tool_calls.hpp"

using namespace inflight;

namespace {

/// What a stream sends, reassembled: content, and each call's name and arguments.
struct reassembled {
  std::string content;
  std::vector<tool_call> calls;
  bool is_incomplete = false;
};

void apply(reassembled& out, const tool_call_stream::delta& d) {
  out.content += d.content;
  for (const auto& piece : d.calls) {
    if (piece.name) {
      REQUIRE(piece.index == int(out.calls.size()));
      CHECK(piece.arguments.empty());
      out.calls.push_back({*piece.name, {}});
    }
    REQUIRE(piece.index < int(out.calls.size()));
    out.calls[std::size_t(piece.index)].arguments += piece.arguments;
  }
}

/// Streams `text` in pieces of the given sizes (cycled).
reassembled stream_in_pieces(tool_call_format f, std::string_view text, const std::vector<std::size_t>& sizes) {
  tool_call_stream s(f);
  reassembled out;
  std::size_t pos = 0;
  for (std::size_t i = 0; pos < text.size(); ++i) {
    const std::size_t n = std::min(sizes[i % sizes.size()], text.size() - pos);
    apply(out, s.push(text.substr(pos, n)));
    pos += n;
  }
  apply(out, s.finish());
  out.is_incomplete = s.has_incomplete_call();
  return out;
}

}  // namespace

TEST_CASE("tool calls: hermes blocks, one and several, with content around them", "[chat][tools]") {
  auto one = parse_tool_calls(tool_call_format::hermes,
                              "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
  REQUIRE(one.calls.size() == 1);
  CHECK(one.calls[0] == tool_call{"get_weather", "{\"city\": \"Paris\"}"});
  CHECK_FALSE(one.content.has_value());

  auto two = parse_tool_calls(tool_call_format::hermes,
                              "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
                              "<tool_call>\n{\"arguments\": {\"x\": [1, {\"y\": \"}\"}]}, \"name\": \"b\"}\n</tool_call>");
  REQUIRE(two.calls.size() == 2);
  CHECK(two.calls[0] == tool_call{"a", "{}"});
  CHECK(two.calls[1] == tool_call{"b", "{\"x\": [1, {\"y\": \"}\"}]}"});
  CHECK(two.content == std::optional<std::string>("Let me check."));

  // "parameters" for "arguments", arguments as a JSON string, the closing tag cut off.
  auto loose = parse_tool_calls(tool_call_format::hermes,
                                "<tool_call>{\"name\": \"f\", \"parameters\": \"{\\\"n\\\": 1}\"}");
  REQUIRE(loose.calls.size() == 1);
  CHECK(loose.calls[0] == tool_call{"f", "{\"n\": 1}"});
}

TEST_CASE("tool calls: malformed output is plain text", "[chat][tools]") {
  const std::vector<std::pair<tool_call_format, std::string>> cases = {
      {tool_call_format::hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }}\n</tool_call>"},
      {tool_call_format::hermes, "<tool_call>\n{\"name\": \"f\"}\n</tool_call>"},                  // no arguments
      {tool_call_format::hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": [1]}\n</tool_call>"},  // not an object
      {tool_call_format::hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}, \"x\": 1}\n</tool_call>"},
      {tool_call_format::hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1"},       // cut off
      {tool_call_format::hermes, "ok <tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call> <tool_call>oops</tool_call>"},
      {tool_call_format::llama3_json, "{\"name\": \"f\", \"parameters\": {}} and more"},
      {tool_call_format::llama3_json, "{\"answer\": 42}"},
      {tool_call_format::json, "{\"name\": \"f\"}"},
      {tool_call_format::json, "[{\"name\": \"f\", \"arguments\": {}}"},
      {tool_call_format::json, "The answer is {\"name\": \"f\", \"arguments\": {}}"},
      {tool_call_format::json, ""},
      {tool_call_format::json, "  \n"},
  };
  for (const auto& [format, text] : cases) {
    INFO(to_string(format) << ": " << text);
    const auto out = parse_tool_calls(format, text);
    CHECK(out.calls.empty());
    CHECK(out.content == std::optional<std::string>(text));
  }
}

TEST_CASE("tool calls: llama 3 and generic JSON calls", "[chat][tools]") {
  auto tagged = parse_tool_calls(tool_call_format::llama3_json,
                                 "<|python_tag|>{\"name\": \"search\", \"parameters\": {\"q\": \"x\"}}");
  REQUIRE(tagged.calls.size() == 1);
  CHECK(tagged.calls[0] == tool_call{"search", "{\"q\": \"x\"}"});
  auto several = parse_tool_calls(tool_call_format::llama3_json,
                                  " {\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"k\": true}}\n");
  REQUIRE(several.calls.size() == 2);
  CHECK(several.calls[1] == tool_call{"b", "{\"k\": true}"});
  CHECK_FALSE(several.content.has_value());

  auto object = parse_tool_calls(tool_call_format::json, "{\"name\":\"f\",\"arguments\":{\"a\":1}}");
  REQUIRE(object.calls.size() == 1);
  CHECK(object.calls[0] == tool_call{"f", "{\"a\":1}"});
  auto list = parse_tool_calls(tool_call_format::json,
                               "[{\"name\":\"f\",\"arguments\":{}}, {\"name\":\"g\",\"arguments\":{\"s\":\"]\"}}]");
  REQUIRE(list.calls.size() == 2);
  CHECK(list.calls[1] == tool_call{"g", "{\"s\":\"]\"}"});
  // A plain answer stays exactly as written.
  auto text = parse_tool_calls(tool_call_format::json, "Hello there.\n");
  CHECK(text.calls.empty());
  CHECK(text.content == std::optional<std::string>("Hello there.\n"));
}

TEST_CASE("tool calls: the format from the template's markers or the renderer", "[chat][tools]") {
  CHECK(detect_tool_call_format("{% if tools %}<tool_call>{% endif %}<|im_start|>", "") == tool_call_format::hermes);
  CHECK(detect_tool_call_format("<|start_header_id|>ipython<|python_tag|>", "") == tool_call_format::llama3_json);
  CHECK(detect_tool_call_format("", "qwen3") == tool_call_format::hermes);
  CHECK(detect_tool_call_format("", "chatml") == tool_call_format::hermes);
  CHECK(detect_tool_call_format("", "llama-3") == tool_call_format::llama3_json);
  CHECK(detect_tool_call_format("", "plain") == tool_call_format::json);
  CHECK(try_tool_call_format("hermes").value() == tool_call_format::hermes);
  CHECK(try_tool_call_format("llama3_json").value() == tool_call_format::llama3_json);
  CHECK_FALSE(try_tool_call_format("auto").has_value());
}

TEST_CASE("tool call stream: the same calls and content at every cut", "[chat][tools][stream]") {
  const std::vector<std::pair<tool_call_format, std::string>> outputs = {
      {tool_call_format::hermes,
       "I'll look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris \\\"FR\\\"\", \"d\": "
       "[1, 2]}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"},
      {tool_call_format::llama3_json,
       "{\"name\": \"a\", \"parameters\": {\"x\": {\"y\": 1}}}; {\"name\": \"b\", \"parameters\": {}}"},
      {tool_call_format::json, "[{\"name\": \"a\", \"arguments\": {\"q\": \"<tool_call>\"}}]"},
      {tool_call_format::hermes, "Plain text with a < sign and <tool_ but no call.  \n"},
      {tool_call_format::json, "  plain answer {not a call}\n"},
  };
  std::mt19937 rng(7);
  for (const auto& [format, text] : outputs) {
    INFO(text);
    const auto whole = parse_tool_calls(format, text);
    for (int round = 0; round < 40; ++round) {
      std::vector<std::size_t> sizes;
      for (int i = 0; i < 8; ++i) sizes.push_back(1 + rng() % (round < 10 ? 1 : 9));
      const auto streamed = stream_in_pieces(format, text, sizes);
      CHECK(streamed.calls == whole.calls);
      CHECK(streamed.content == whole.content.value_or(""));
      CHECK_FALSE(streamed.is_incomplete);
    }
  }
}

TEST_CASE("tool call stream: arguments are sent as they are generated, markup never", "[chat][tools][stream]") {
  tool_call_stream s(tool_call_format::hermes);
  CHECK(s.push("Sure").content == "Sure");
  auto held = s.push(" <tool_");  // may be the start of a call: held back
  CHECK(held.is_empty());
  auto start = s.push("call>\n{\"name\": \"f\", \"arguments\": {\"a\": ");
  CHECK(start.content.empty());  // " " before the call: trailing white space is held, then dropped
  REQUIRE(start.calls.size() == 2);
  CHECK(start.calls[0].name == std::optional<std::string>("f"));
  CHECK(start.calls[1].arguments == "{\"a\": ");
  auto more = s.push("12");
  REQUIRE(more.calls.size() == 1);
  CHECK(more.calls[0].index == 0);
  CHECK(more.calls[0].arguments == "12");
  auto end = s.push("}}\n</tool_call>");
  REQUIRE(end.calls.size() == 1);
  CHECK(end.calls[0].arguments == "}");
  CHECK(s.finish().is_empty());
  CHECK(s.num_calls() == 1);
  CHECK_FALSE(s.has_incomplete_call());
}

TEST_CASE("tool call stream: a call cut off by the length limit is incomplete", "[chat][tools][stream]") {
  tool_call_stream s(tool_call_format::json);
  auto d = s.push("{\"name\": \"f\", \"arguments\": {\"a\": \"lo");
  REQUIRE(d.calls.size() == 2);
  CHECK(d.calls[1].arguments == "{\"a\": \"lo");
  s.finish();
  CHECK(s.num_calls() == 1);
  CHECK(s.has_incomplete_call());
  // Plain text streams through unchanged, trailing white space included at the end.
  tool_call_stream t(tool_call_format::json);
  std::string sent = t.push("Hi ").content;
  sent += t.push(" there \n").content;
  sent += t.finish().content;
  CHECK(sent == "Hi  there \n");
  CHECK(t.num_calls() == 0);
}

TEST_CASE("tool calls: an escaped quote inside a string does not end it, whole or streamed at any cut",
          "[chat][tools][stream]") {
  // {"q":"a\"}b"}: a bracket matcher that missed the escape would end the string at \"
  // and the arguments at the } after it.
  const std::string args = R"({"q":"a\"}b","r":["\\",{"s":"\"]"}]})";
  const std::vector<std::pair<tool_call_format, std::string>> outputs = {
      {tool_call_format::hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": " + args + "}\n</tool_call>"},
      {tool_call_format::llama3_json, "{\"name\": \"f\", \"parameters\": " + args + "}"},
      {tool_call_format::json, "[{\"arguments\": " + args + ", \"name\": \"f\"}]"},
  };
  for (const auto& [format, text] : outputs) {
    INFO(text);
    const auto whole = parse_tool_calls(format, text);
    REQUIRE(whole.calls.size() == 1);
    CHECK(whole.calls[0] == tool_call{"f", args});
    CHECK_FALSE(whole.content.has_value());
    for (std::size_t cut = 0; cut <= text.size(); ++cut) {
      INFO("cut at " << cut);
      tool_call_stream s(format);
      reassembled out;
      apply(out, s.push(std::string_view(text).substr(0, cut)));
      apply(out, s.push(std::string_view(text).substr(cut)));
      apply(out, s.finish());
      REQUIRE(out.calls.size() == 1);
      CHECK(out.calls[0] == tool_call{"f", args});
      CHECK(out.content.empty());
      CHECK_FALSE(s.has_incomplete_call());
    }
    const auto by_byte = stream_in_pieces(format, text, {1});
    REQUIRE(by_byte.calls.size() == 1);
    CHECK(by_byte.calls[0] == tool_call{"f", args});
    CHECK(by_byte.content.empty());
  }
  // Arguments given as a JSON string: its escapes are read the same way.
  const auto quoted = parse_tool_calls(tool_call_format::json,
                                       R"({"name": "f", "arguments": "{\"q\":\"a\\\"}b\"}"})");
  REQUIRE(quoted.calls.size() == 1);
  CHECK(quoted.calls[0] == tool_call{"f", R"({"q":"a\"}b"})"});
}

// Chat messages against OpenAI's schema: the roles and content shapes it accepts, and
// a 400 naming the exact field of anything else.
#include <catch2/catch.hpp>

#include "actors/gateway/openai_request.hpp"
#include "tests/actors/gateway/byte_model.hpp"

using namespace inflight;
using namespace inflight::gateway;
using nlohmann::json;

namespace {

served_model byte_model() { return test::byte_model({.max_context = 512}); }

api_result<openai_request> parse_chat(const std::string& messages) {
  return try_parse_request(json{{"messages", json::parse(messages)}}, api_kind::chat, byte_model());
}

}  // namespace

TEST_CASE("chat messages: every role and content shape OpenAI accepts is accepted", "[gateway][protocol][chat]") {
  const std::vector<std::string> good = {
      R"([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}])",
      R"([{"role": "developer", "content": "be brief"}, {"role": "user", "content": "hi"}])",
      R"([{"role": "system", "content": [{"type": "text", "text": "be brief"}]}, {"role": "user", "content": "hi"}])",
      R"([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "name": "ann"}])",
      R"([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, {"role": "user", "content": "x"}])",
      R"([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": "o"}]},
          {"role": "user", "content": "x"}])",
      R"([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
          {"role": "user", "content": "x"}])",
      R"([{"role": "user", "content": "weather?"},
          {"role": "assistant", "content": null,
           "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get", "arguments": "{}"}}]},
          {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}])",
      R"([{"role": "user", "content": "weather?"},
          {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "get", "arguments": ""}}]},
          {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "sunny"}]}])",
  };
  for (const auto& messages : good) {
    INFO(messages);
    auto r = parse_chat(messages);
    INFO((r ? std::string() : r.error().message));
    CHECK(r.has_value());
  }
}

TEST_CASE("chat messages: schema violations are 400 naming the field", "[gateway][protocol][chat]") {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"(["hi"])", "messages[0]"},
      {R"([{"content": "hi"}])", "messages[0].role"},
      {R"([{"role": "wizard", "content": "hi"}])", "messages[0].role"},
      {R"([{"role": "function", "content": "hi"}])", "messages[0].role"},
      {R"([{"role": 3, "content": "hi"}])", "messages[0].role"},
      {R"([{"role": "user"}])", "messages[0].content"},
      {R"([{"role": "user", "content": null}])", "messages[0].content"},
      {R"([{"role": "system", "content": "a"}, {"role": "system"}])", "messages[1].content"},
      {R"([{"role": "developer"}])", "messages[0].content"},
      {R"([{"role": "user", "content": 7}])", "messages[0].content"},
      {R"([{"role": "user", "content": {"text": "x"}}])", "messages[0].content"},
      {R"([{"role": "user", "content": []}])", "messages[0].content"},
      {R"([{"role": "user", "content": [{"type": "text"}]}])", "messages[0].content[0].text"},
      {R"([{"role": "user", "content": [{"type": "text", "text": 5}]}])", "messages[0].content[0].text"},
      {R"([{"role": "user", "content": [{"text": "x"}]}])", "messages[0].content[0].type"},
      {R"([{"role": "user", "content": [{"type": "video", "text": "x"}]}])", "messages[0].content[0].type"},
      {R"([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}])",
       "messages[0].content[0].type"},
      {R"([{"role": "system", "content": [{"type": "refusal", "refusal": "x"}]}])", "messages[0].content[0].type"},
      {R"([{"role": "user", "content": "x", "name": 4}])", "messages[0].name"},
      {R"([{"role": "user", "content": "x"}, {"role": "assistant"}])", "messages[1].content"},
      {R"([{"role": "user", "content": "x"}, {"role": "assistant", "content": null}])", "messages[1].content"},
      {R"([{"role": "user", "content": "x"}, {"role": "assistant", "content": null, "tool_calls": []}])",
       "messages[1].content"},
      {R"([{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": "f"}])", "messages[1].tool_calls"},
      {R"([{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"type": "function",
            "function": {"name": "f", "arguments": "{}"}}]}])", "messages[1].tool_calls[0].id"},
      {R"([{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
            "function": {"arguments": "{}"}}]}])", "messages[1].tool_calls[0].function.name"},
      {R"([{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
            "function": {"name": "f", "arguments": {}}}]}])", "messages[1].tool_calls[0].function.arguments"},
      {R"([{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"id": "c", "type": "web",
            "function": {"name": "f", "arguments": "{}"}}]}])", "messages[1].tool_calls[0].type"},
      {R"([{"role": "user", "content": "x"}, {"role": "tool", "content": "r"}])", "messages[1].tool_call_id"},
      {R"([{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": 1, "content": "r"}])",
       "messages[1].tool_call_id"},
      {R"([{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "c"}])", "messages[1].content"},
  };
  for (const auto& [messages, param] : bad) {
    INFO(messages);
    auto r = parse_chat(messages);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().status == 400);
    CHECK(r.error().type == "invalid_request_error");
    CHECK(r.error().param == param);
    CHECK_THAT(r.error().message, Catch::Contains(param));
  }
}

// The Messages API's answers over a chat call (actors/gateway/anthropic_shape): the
// message body, the SSE events a stream sends (read back as Anthropic's SDKs read them)
// and the errors.
#include <catch2/catch.hpp>

#include <map>

#include "actors/gateway/anthropic_shape.hpp"
#include "actors/gateway/openai_response.hpp"

using namespace inflight;
using namespace inflight::gateway;
using nlohmann::json;

namespace {

const response_meta meta{"chatcmpl-1", 0, "m"};

json chunk(const json& delta, const char* finish = nullptr) { return chat_chunk(meta, 0, delta, nullptr, finish); }

struct sse_event {
  std::string name;
  json data;
};

/// Splits `event: <name>\ndata: <json>\n\n` events; every event must have both lines.
std::vector<sse_event> events_of(const std::string& bytes) {
  std::vector<sse_event> out;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const auto end = bytes.find("\n\n", pos);
    REQUIRE(end != std::string::npos);
    const std::string event = bytes.substr(pos, end - pos);
    REQUIRE(event.starts_with("event: "));
    const auto nl = event.find('\n');
    REQUIRE(nl != std::string::npos);
    REQUIRE(event.substr(nl + 1).starts_with("data: "));
    sse_event e{event.substr(7, nl - 7), json::parse(event.substr(nl + 7))};
    CHECK(e.data["type"] == e.name);
    out.push_back(std::move(e));
    pos = end + 2;
  }
  return out;
}

std::vector<std::string> names_of(const std::vector<sse_event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.name);
  return out;
}

/// The message a stream builds, as the SDK's MessageStream accumulates it (blocks by index).
json accumulate(const std::vector<sse_event>& events) {
  json message;
  std::map<int, std::string> partial_json;
  for (const auto& [name, data] : events) {
    if (name == "message_start") message = data["message"];
    if (name == "content_block_start") {
      REQUIRE(data["index"] == message["content"].size());
      message["content"].push_back(data["content_block"]);
    }
    if (name == "content_block_delta") {
      const int i = data["index"];
      REQUIRE(i == int(message["content"].size()) - 1);
      json& block = message["content"][std::size_t(i)];
      const json& d = data["delta"];
      if (d["type"] == "text_delta") block["text"] = block["text"].get<std::string>() + d["text"].get<std::string>();
      if (d["type"] == "thinking_delta")
        block["thinking"] = block["thinking"].get<std::string>() + d["thinking"].get<std::string>();
      if (d["type"] == "signature_delta") block["signature"] = d["signature"];
      if (d["type"] == "input_json_delta") partial_json[i] += d["partial_json"].get<std::string>();
    }
    if (name == "content_block_stop" && partial_json.contains(data["index"]))
      message["content"][data["index"].get<std::size_t>()]["input"] = json::parse(partial_json[data["index"]]);
    if (name == "message_delta") {
      message["stop_reason"] = data["delta"]["stop_reason"];
      message["usage"] = data["usage"];
    }
  }
  return message;
}

const json usage = usage_json(12, 7, 4);

}  // namespace

TEST_CASE("anthropic shape: a stream of reasoning, text and two tool calls", "[gateway][anthropic]") {
  anthropic_shape shape("m", 12);
  std::string bytes;
  bytes += shape.on_chunk(chunk(chat_role_delta()));
  bytes += shape.on_chunk(chunk({{"reasoning_content", "let me "}, {"reasoning", "let me "}}));
  bytes += shape.on_chunk(chunk({{"reasoning_content", "think"}, {"reasoning", "think"}}));
  bytes += shape.on_chunk(chunk({{"content", "Sure"}}));
  bytes += shape.on_chunk(chunk({{"content", "."}}));
  bytes += shape.on_chunk(chunk(tool_call_delta(0, "call_abc", "get_weather", "")));
  bytes += shape.on_chunk(chunk(tool_call_delta(0, "", std::nullopt, "{\"city\": ")));
  bytes += shape.on_chunk(chunk(tool_call_delta(0, "", std::nullopt, "\"Oslo\"}")));
  bytes += shape.on_chunk(chunk(tool_call_delta(1, "call_def", "get_time", "{}")));
  bytes += shape.on_chunk(chunk(json::object(), "tool_calls"));
  bytes += shape.on_stream_end(usage);
  const auto events = events_of(bytes);
  const std::vector<std::string> expected = {
      "message_start",       "ping",
      "content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop",
      "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
      "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
      "content_block_start", "content_block_delta", "content_block_stop",
      "message_delta",       "message_stop"};
  CHECK(names_of(events) == expected);
  const json& start = events.front().data["message"];
  CHECK(start["id"].get<std::string>().starts_with("msg_"));
  CHECK(start["content"] == json::array());
  CHECK(start["usage"]["input_tokens"] == 12);
  CHECK(start["stop_reason"].is_null());
  // The thinking block ends with its (empty) signature.
  CHECK(events[5].data["delta"] == json({{"type", "signature_delta"}, {"signature", ""}}));

  const json message = accumulate(events);
  REQUIRE(message["content"].size() == 4);
  CHECK(message["content"][0] == json({{"type", "thinking"}, {"thinking", "let me think"}, {"signature", ""}}));
  CHECK(message["content"][1] == json({{"type", "text"}, {"text", "Sure."}}));
  CHECK(message["content"][2]["type"] == "tool_use");
  CHECK(message["content"][2]["id"] == "toolu_abc");
  CHECK(message["content"][2]["name"] == "get_weather");
  CHECK(message["content"][2]["input"] == json({{"city", "Oslo"}}));
  CHECK(message["content"][3]["id"] == "toolu_def");
  CHECK(message["content"][3]["input"] == json::object());
  CHECK(message["stop_reason"] == "tool_use");
  CHECK(message["usage"] == json({{"input_tokens", 8}, {"output_tokens", 7},
                                  {"cache_read_input_tokens", 4}, {"cache_creation_input_tokens", 0}}));
}

TEST_CASE("anthropic shape: a text stream cut by max_tokens, and an empty one has no block", "[gateway][anthropic]") {
  anthropic_shape shape("m", 3);
  std::string bytes = shape.on_chunk(chunk(chat_role_delta()));
  bytes += shape.on_chunk(chunk({{"content", "Once"}}));
  bytes += shape.on_chunk(chunk({{"content", " upon"}}, "length"));
  bytes += shape.on_stream_end(usage);
  const json message = accumulate(events_of(bytes));
  CHECK(message["content"] == json::array({{{"type", "text"}, {"text", "Once upon"}}}));
  CHECK(message["stop_reason"] == "max_tokens");

  anthropic_shape empty("m", 3);
  bytes = empty.on_chunk(chunk(chat_role_delta()));
  bytes += empty.on_chunk(chunk(json::object(), "stop"));
  bytes += empty.on_stream_end(usage);
  const auto events = events_of(bytes);
  CHECK(names_of(events) == std::vector<std::string>{"message_start", "ping", "message_delta", "message_stop"});
  CHECK(accumulate(events)["stop_reason"] == "end_turn");
}

TEST_CASE("anthropic shape: an error mid-stream is an error event", "[gateway][anthropic]") {
  anthropic_shape shape("m", 3);
  std::string bytes = shape.on_chunk(chunk(chat_role_delta()));
  bytes += shape.on_chunk(chunk({{"content", "Once"}}));
  bytes += shape.on_stream_error(api_error{500, "internal_error", "the backend failed", {}, "internal"});
  const auto events = events_of(bytes);
  REQUIRE(events.back().name == "error");
  CHECK(events.back().data == json({{"type", "error"}, {"error", {{"type", "api_error"}, {"message", "the backend failed"}}}}));
}

TEST_CASE("anthropic shape: a whole chat.completion as a message", "[gateway][anthropic]") {
  choice_result r{"It is sunny.", nullptr, "tool_calls"};
  r.reasoning = "weather first";
  r.tool_calls = json::array({tool_call_json("call_1f", "get_weather", "{\"city\":\"Oslo\",\"days\":2}")});
  const json body = chat_response(meta, {r}, usage);
  anthropic_shape shape("m", 12);
  const call_output out = shape.on_response(body);
  CHECK(out.status == 200);
  CHECK(out.is_last);
  const json message = json::parse(out.bytes);
  CHECK(message["id"].get<std::string>().starts_with("msg_"));
  CHECK(message["type"] == "message");
  CHECK(message["role"] == "assistant");
  CHECK(message["model"] == "m");
  CHECK(message["content"] ==
        json::parse(R"([{"type": "thinking", "thinking": "weather first", "signature": ""},
                        {"type": "text", "text": "It is sunny."},
                        {"type": "tool_use", "id": "toolu_1f", "name": "get_weather", "input": {"city": "Oslo", "days": 2}}])"));
  CHECK(message["stop_reason"] == "tool_use");
  CHECK(message["stop_sequence"].is_null());
  CHECK(message["usage"]["input_tokens"] == 8);
  CHECK(message["usage"]["cache_read_input_tokens"] == 4);

  // No reasoning and calls only: one tool_use block.
  choice_result calls_only{"", nullptr, "tool_calls"};
  calls_only.is_content_null = true;
  calls_only.tool_calls = json::array({tool_call_json("call_2", "f", "{}")});
  const json only = anthropic_message(chat_response(meta, {calls_only}, usage), "msg_1", "m");
  REQUIRE(only["content"].size() == 1);
  CHECK(only["content"][0]["type"] == "tool_use");
}

TEST_CASE("anthropic shape: errors and stop reasons in Anthropic's vocabulary", "[gateway][anthropic]") {
  CHECK(anthropic_error_body(bad_request("max_tokens is required", "max_tokens")) ==
        json({{"type", "error"}, {"error", {{"type", "invalid_request_error"}, {"message", "max_tokens is required"}}}}));
  CHECK(anthropic_error_type(401) == "authentication_error");
  CHECK(anthropic_error_type(404) == "not_found_error");
  CHECK(anthropic_error_type(413) == "request_too_large");
  CHECK(anthropic_error_type(429) == "rate_limit_error");
  CHECK(anthropic_error_type(503) == "overloaded_error");
  CHECK(anthropic_error_type(500) == "api_error");
  anthropic_shape shape("m", 1);
  const call_output out = shape.on_error(api_error{429, "rate_limit_error", "queue full", {}, "queue_full"});
  CHECK(out.status == 429);
  CHECK(json::parse(out.bytes)["error"]["type"] == "rate_limit_error");
  const http_reply reply = anthropic_error_reply(unauthorized(false));
  CHECK(reply.status == 401);
  CHECK(json::parse(reply.body)["error"]["type"] == "authentication_error");

  CHECK(anthropic_stop_reason("stop") == "end_turn");
  CHECK(anthropic_stop_reason("length") == "max_tokens");
  CHECK(anthropic_stop_reason("tool_calls") == "tool_use");
  CHECK(anthropic_stop_reason("abort") == "end_turn");
  CHECK(tool_use_id("call_0a1b") == "toolu_0a1b");
}

// The Responses shape over a chat call: chat chunks in, typed SSE events out; a
// chat.completion body in, a Response object out; finished responses stored.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/gateway/openai_response.hpp"
#include "actors/gateway/responses_shape.hpp"

using namespace inflight::gateway;
using nlohmann::json;

namespace {

struct sse_event_t {
  std::string type;
  json data;
};

/// `event: T\ndata: {...}\n\n` events; the event line must match the payload's type.
std::vector<sse_event_t> parse_events(const std::string& bytes) {
  std::vector<sse_event_t> out;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const auto end = bytes.find("\n\n", pos);
    REQUIRE(end != std::string::npos);
    const std::string block = bytes.substr(pos, end - pos);
    pos = end + 2;
    REQUIRE(block.rfind("event: ", 0) == 0);
    const auto nl = block.find('\n');
    REQUIRE(block.substr(nl + 1, 6) == "data: ");
    sse_event_t e{block.substr(7, nl - 7), json::parse(block.substr(nl + 7))};
    CHECK(e.data["type"] == e.type);
    out.push_back(std::move(e));
  }
  return out;
}

const response_meta meta{"chatcmpl-1", 1, "m"};

json chunk(const json& delta, const char* finish = nullptr) { return chat_chunk(meta, 0, delta, nullptr, finish); }

responses_request request(bool store = true) {
  auto r = try_parse_responses({{"input", "Hi"}, {"store", store}}, nullptr);
  REQUIRE(r.has_value());
  return *r;
}

response_head head(const responses_request& r) { return {"resp_1", 100, "stories", r.echo}; }

int count_words(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == ' ';
  return n + 1;
}

std::vector<std::string> types_of(const std::vector<sse_event_t>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.type);
  return out;
}

}  // namespace

TEST_CASE("responses shape: a stream of reasoning and text is two items, numbered events", "[gateway][responses]") {
  responses_store store(8, 0.0);
  const auto r = request();
  responses_shape shape(head(r), r, store, count_words);
  std::string bytes = shape.on_chunk(chunk(chat_role_delta()));
  bytes += shape.on_chunk(chunk({{"reasoning_content", "think "}, {"reasoning", "think "}}));
  bytes += shape.on_chunk(chunk({{"reasoning_content", "hard"}, {"reasoning", "hard"}}));
  bytes += shape.on_chunk(chunk({{"content", "Once"}}));
  bytes += shape.on_chunk(chunk({{"content", " upon"}}));
  bytes += shape.on_chunk(chunk(json::object(), "stop"));
  bytes += shape.on_stream_end(usage_json(5, 7, 2));
  const auto events = parse_events(bytes);
  CHECK(types_of(events) == std::vector<std::string>{
      "response.created", "response.in_progress",
      "response.output_item.added", "response.content_part.added", "response.reasoning_text.delta",
      "response.reasoning_text.delta", "response.reasoning_text.done", "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added", "response.content_part.added", "response.output_text.delta",
      "response.output_text.delta", "response.output_text.done", "response.content_part.done",
      "response.output_item.done", "response.completed"});
  for (std::size_t i = 0; i < events.size(); ++i) CHECK(events[i].data["sequence_number"] == i);
  CHECK(events[0].data["response"]["status"] == "in_progress");
  CHECK(events[0].data["response"]["output"].empty());
  CHECK_FALSE(events[0].data["response"].contains("usage"));
  CHECK(events[2].data["item"]["type"] == "reasoning");
  CHECK(events[6].data["text"] == "think hard");
  CHECK(events[9].data["output_index"] == 1);
  const std::string msg_id = events[9].data["item"]["id"];
  CHECK(msg_id.rfind("msg_", 0) == 0);
  CHECK(events[11].data["item_id"] == msg_id);
  CHECK(events[13].data["text"] == "Once upon");
  const json done = events.back().data["response"];
  CHECK(done["status"] == "completed");
  CHECK(done["id"] == "resp_1");
  REQUIRE(done["output"].size() == 2);
  CHECK(done["output"][0]["content"][0] == json::parse(R"({"type": "reasoning_text", "text": "think hard"})"));
  CHECK(done["output"][1]["content"][0]["text"] == "Once upon");
  CHECK(done["output"][1]["status"] == "completed");
  CHECK(done["usage"] == json::parse(R"({"input_tokens": 5, "input_tokens_details": {"cached_tokens": 2},
      "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 2}, "total_tokens": 12})"));
  // Stored with its conversation: the input, then the output items.
  auto stored = store.find("resp_1");
  REQUIRE(stored.has_value());
  CHECK(stored->response == done);
  const json items = conversation_items(stored->turn);
  REQUIRE(items.size() == 3);
  CHECK(items[0]["content"] == "Hi");
  CHECK(items[2]["id"] == msg_id);
}

TEST_CASE("responses shape: streamed tool calls are function_call items", "[gateway][responses]") {
  responses_store store(8, 0.0);
  const auto r = request(false);
  responses_shape shape(head(r), r, store, count_words);
  std::string bytes = shape.on_chunk(chunk(chat_role_delta()));
  bytes += shape.on_chunk(chunk(tool_call_delta(0, "call_x", std::string("get_weather"), "")));
  bytes += shape.on_chunk(chunk(tool_call_delta(0, "", std::nullopt, "{\"city\":")));
  bytes += shape.on_chunk(chunk(tool_call_delta(0, "", std::nullopt, "\"Oslo\"}")));
  bytes += shape.on_chunk(chunk(tool_call_delta(1, "call_y", std::string("get_time"), "{}")));
  bytes += shape.on_chunk(chunk(json::object(), "tool_calls"));
  bytes += shape.on_stream_end(usage_json(5, 9));
  const auto events = parse_events(bytes);
  CHECK(types_of(events) == std::vector<std::string>{
      "response.created", "response.in_progress",
      "response.output_item.added", "response.function_call_arguments.delta",
      "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
      "response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done",
      "response.output_item.done", "response.completed"});
  CHECK(events[2].data["item"]["call_id"] == "call_x");
  CHECK(events[2].data["item"]["arguments"] == "");
  CHECK(events[5].data["arguments"] == "{\"city\":\"Oslo\"}");
  CHECK(events[5].data["name"] == "get_weather");
  const json out = events.back().data["response"]["output"];
  REQUIRE(out.size() == 2);
  CHECK(out[0]["type"] == "function_call");
  CHECK(std::string(out[0]["id"]).rfind("fc_", 0) == 0);
  CHECK(out[1]["call_id"] == "call_y");
  CHECK(out[1]["arguments"] == "{}");
  CHECK(events.back().data["response"]["usage"]["output_tokens_details"]["reasoning_tokens"] == 0);
  CHECK(store.size() == 0);  // store: false
}

TEST_CASE("responses shape: a reply cut by max_output_tokens is incomplete", "[gateway][responses]") {
  responses_store store(8, 0.0);
  const auto r = request();
  responses_shape shape(head(r), r, store, count_words);
  std::string bytes = shape.on_chunk(chunk(chat_role_delta()));
  bytes += shape.on_chunk(chunk({{"content", "Once"}}));
  bytes += shape.on_chunk(chunk(json::object(), "length"));
  bytes += shape.on_stream_end(usage_json(5, 1));
  const auto events = parse_events(bytes);
  CHECK(events.back().type == "response.incomplete");
  const json response = events.back().data["response"];
  CHECK(response["status"] == "incomplete");
  CHECK(response["incomplete_details"] == json::parse(R"({"reason": "max_output_tokens"})"));
  CHECK(response["output"][0]["status"] == "incomplete");
  CHECK(response["completed_at"].is_null());
}

TEST_CASE("responses shape: an error mid-stream is an error event, then response.failed", "[gateway][responses]") {
  responses_store store(8, 0.0);
  const auto r = request();
  responses_shape shape(head(r), r, store, count_words);
  std::string bytes = shape.on_chunk(chunk(chat_role_delta()));
  bytes += shape.on_chunk(chunk({{"content", "Once"}}));
  bytes += shape.on_stream_error(api_error{500, "server_error", "the step failed", {}, "internal"});
  const auto events = parse_events(bytes);
  REQUIRE(events.size() >= 3);
  const auto& error = events[events.size() - 2];
  CHECK(error.type == "error");
  CHECK(error.data["message"] == "the step failed");
  CHECK(error.data["code"] == "internal");
  CHECK(error.data["param"].is_null());
  const json failed = events.back().data["response"];
  CHECK(events.back().type == "response.failed");
  CHECK(failed["status"] == "failed");
  CHECK(failed["error"] == json::parse(R"({"code": "server_error", "message": "the step failed"})"));
  CHECK(store.size() == 0);
}

TEST_CASE("responses shape: a chat.completion body is a Response object", "[gateway][responses]") {
  responses_store store(8, 0.0);
  const auto r = request();
  responses_shape shape(head(r), r, store, count_words);
  choice_result c{"", nullptr, "tool_calls"};
  c.reasoning = "a b c";
  c.tool_calls = json::array({tool_call_json("call_1", "get_weather", "{\"city\":\"Oslo\"}")});
  c.is_content_null = true;
  const json body = chat_response(meta, {c}, usage_json(10, 4));
  const call_output out = shape.on_response(body);
  CHECK(out.status == 200);
  CHECK(out.is_last);
  const json response = json::parse(out.bytes);
  CHECK(response["object"] == "response");
  CHECK(response["status"] == "completed");
  CHECK(response["completed_at"].is_number());
  CHECK(response["model"] == "stories");
  CHECK(response["tool_choice"] == "auto");
  REQUIRE(response["output"].size() == 2);  // reasoning, call: no empty message
  CHECK(response["output"][0]["type"] == "reasoning");
  CHECK(response["output"][0]["content"][0]["text"] == "a b c");
  CHECK(response["output"][1] == json{{"id", response["output"][1]["id"]}, {"type", "function_call"},
                                      {"status", "completed"}, {"call_id", "call_1"}, {"name", "get_weather"},
                                      {"arguments", "{\"city\":\"Oslo\"}"}});
  CHECK(response["usage"]["output_tokens_details"]["reasoning_tokens"] == 3);
  CHECK(store.find("resp_1").has_value());

  const call_output err = shape.on_error(bad_request("max_tokens must be at least 1", "max_tokens"));
  CHECK(err.status == 400);
  CHECK(json::parse(err.bytes)["error"]["param"] == "max_output_tokens");
}

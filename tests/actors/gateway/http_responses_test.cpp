// POST /v1/responses, GET and DELETE /v1/responses/{id} against a real server driving
// stories260K: the same tokens as the chat completion it becomes, streamed and not, tool
// calls, reasoning, stored conversations and every refusal.
#include "tests/actors/gateway/gateway_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

const json weather_tools = json::parse(R"([{"type": "function", "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}},
                   "required": ["city"], "additionalProperties": false}}])");

/// The data of every `event: T` of a Responses stream (the event line checked against it).
std::vector<json> response_events(const std::string& body) {
  std::vector<json> out;
  std::size_t pos = 0;
  while (pos < body.size()) {
    const auto end = body.find("\n\n", pos);
    REQUIRE(end != std::string::npos);
    const std::string block = body.substr(pos, end - pos);
    pos = end + 2;
    const auto nl = block.find('\n');
    REQUIRE(block.rfind("event: ", 0) == 0);
    json data = json::parse(block.substr(nl + 7));
    CHECK(data["type"] == block.substr(7, nl - 7));
    CHECK(data["sequence_number"] == out.size());
    out.push_back(std::move(data));
  }
  return out;
}

std::string output_text(const json& response) {
  std::string text;
  for (const auto& item : response["output"])
    if (item["type"] == "message")
      for (const auto& part : item["content"]) text += part["text"].get<std::string>();
  return text;
}

}  // namespace

TEST_CASE("gateway responses: the same tokens as chat, streamed and not", "[gateway][http][responses]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  const json chat = post_json(s.port, "/v1/chat/completions",
                              {{"messages", {{{"role", "system"}, {"content", "Be kind."}},
                                             {{"role", "user"}, {"content", "Tell me a story"}}}},
                               {"max_tokens", 12}, {"temperature", 0}}).body_json();
  const json body = {{"input", "Tell me a story"}, {"instructions", "Be kind."}, {"max_output_tokens", 12},
                     {"temperature", 0}, {"metadata", {{"case", "plain"}}}};
  auto plain = post_json(s.port, "/v1/responses", body);
  REQUIRE(plain.status == 200);
  const json r = plain.body_json();
  CHECK(std::string(r["id"]).rfind("resp_", 0) == 0);
  CHECK(r["object"] == "response");
  const bool is_cut = chat["choices"][0]["finish_reason"] == "length";
  CHECK(r["status"] == (is_cut ? "incomplete" : "completed"));
  CHECK(r["incomplete_details"] == (is_cut ? json{{"reason", "max_output_tokens"}} : json(nullptr)));
  CHECK(r["instructions"] == "Be kind.");
  CHECK(r["metadata"] == json{{"case", "plain"}});
  CHECK(r["max_output_tokens"] == 12);
  CHECK(output_text(r) == chat["choices"][0]["message"]["content"]);
  CHECK(r["usage"]["input_tokens"] == chat["usage"]["prompt_tokens"]);
  CHECK(r["usage"]["output_tokens"] == chat["usage"]["completion_tokens"]);

  json streamed_body = body;
  streamed_body["stream"] = true;
  auto streamed = post_json(s.port, "/v1/responses", streamed_body);
  REQUIRE(streamed.status == 200);
  CHECK(streamed.content_type.find("text/event-stream") != std::string::npos);
  const auto events = response_events(streamed.body);
  REQUIRE(events.size() >= 8);
  CHECK(events[0]["type"] == "response.created");
  CHECK(events[1]["type"] == "response.in_progress");
  std::string text;
  for (const auto& e : events)
    if (e["type"] == "response.output_text.delta") text += e["delta"].get<std::string>();
  CHECK(text == output_text(r));
  CHECK(events.back()["type"] == (is_cut ? "response.incomplete" : "response.completed"));
  CHECK(output_text(events.back()["response"]) == text);
  CHECK(events.back()["response"]["usage"] == r["usage"]);
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway responses: a forced tool call, its output, and a stored conversation", "[gateway][http][responses]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  auto first = post_json(s.port, "/v1/responses",
                         {{"input", "What is the weather in Oslo?"}, {"tools", weather_tools}, {"seed", 3},
                          {"tool_choice", {{"type", "function"}, {"name", "get_weather"}}}, {"max_output_tokens", 120}});
  REQUIRE(first.status == 200);
  const json r1 = first.body_json();
  CHECK(r1["status"] == "completed");
  REQUIRE(r1["output"].size() == 1);
  const json call = r1["output"][0];
  CHECK(call["type"] == "function_call");
  CHECK(call["name"] == "get_weather");
  CHECK(json::parse(call["arguments"].get<std::string>()).contains("city"));
  CHECK(r1["tools"][0]["name"] == "get_weather");

  // The tool's output continues the stored conversation.
  const json output = {{{"type", "function_call_output"}, {"call_id", call["call_id"]}, {"output", "12 C"}}};
  auto second = post_json(s.port, "/v1/responses", {{"input", output}, {"previous_response_id", r1["id"]},
                                                    {"tools", weather_tools}, {"max_output_tokens", 8},
                                                    {"temperature", 0}});
  REQUIRE(second.status == 200);
  const json r2 = second.body_json();
  CHECK(r2["previous_response_id"] == r1["id"]);
  CHECK(r2["output"][0]["type"] == "message");
  CHECK_FALSE(output_text(r2).empty());
  CHECK(r2["usage"]["input_tokens"].get<int>() > r1["usage"]["input_tokens"].get<int>());
  // The same conversation sent whole gives the same prompt.
  json whole = json::array({{{"role", "user"}, {"content", "What is the weather in Oslo?"}}, call, output[0]});
  auto resent = post_json(s.port, "/v1/responses", {{"input", whole}, {"tools", weather_tools}, {"max_output_tokens", 8},
                                                    {"temperature", 0}, {"store", false}});
  REQUIRE(resent.status == 200);
  CHECK(resent.body_json()["usage"]["input_tokens"] == r2["usage"]["input_tokens"]);
  CHECK(output_text(resent.body_json()) == output_text(r2));

  // GET returns it as it was sent; DELETE removes it; an unstored one is a 404.
  auto got = get(s.port, "/v1/responses/" + r2["id"].get<std::string>());
  REQUIRE(got.status == 200);
  CHECK(got.body_json() == r2);
  CHECK(get(s.port, "/v1/responses/" + resent.body_json()["id"].get<std::string>()).status == 404);
  auto deleted = http_call(s.port, http::verb::delete_, "/v1/responses/" + r1["id"].get<std::string>());
  REQUIRE(deleted.status == 200);
  CHECK(deleted.body_json() == json{{"id", r1["id"]}, {"object", "response"}, {"deleted", true}});
  CHECK(get(s.port, "/v1/responses/" + r1["id"].get<std::string>()).status == 404);
  CHECK(http_call(s.port, http::verb::delete_, "/v1/responses/" + r1["id"].get<std::string>()).status == 404);
  // r2 still continues: its conversation holds r1's items.
  auto third = post_json(s.port, "/v1/responses", {{"input", "Thanks"}, {"previous_response_id", r2["id"]},
                                                   {"tools", weather_tools}, {"max_output_tokens", 4}});
  REQUIRE(third.status == 200);
  CHECK(third.body_json()["usage"]["input_tokens"].get<int>() > r2["usage"]["input_tokens"].get<int>());
  auto unknown = post_json(s.port, "/v1/responses", {{"input", "x"}, {"previous_response_id", r1["id"]}});
  REQUIRE(unknown.status == 404);
  CHECK(unknown.body_json()["error"]["param"] == "previous_response_id");
  CHECK(unknown.body_json()["error"]["code"] == "previous_response_not_found");
  CHECK(unknown.body_json()["error"]["message"].get<std::string>().find(r1["id"].get<std::string>()) != std::string::npos);
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway responses: a thinking model's reasoning is a reasoning item", "[gateway][http][responses]") {
  if (!has_stories()) return;
  auto d = stories_deployment();
  d.model.reasoning_parser = "think";
  served s(d);
  const json body = {{"input", "Tell me a story"}, {"max_output_tokens", 60}, {"seed", 5},
                     {"guided_regex", "<think>[a-z ]{1,20}</think>[A-Za-z ]{1,20}"}};
  auto plain = post_json(s.port, "/v1/responses", body);
  REQUIRE(plain.status == 200);
  const json r = plain.body_json();
  REQUIRE(r["output"].size() == 2);
  CHECK(r["output"][0]["type"] == "reasoning");
  const std::string reasoning = r["output"][0]["content"][0]["text"];
  CHECK_FALSE(reasoning.empty());
  CHECK(reasoning.find("think>") == std::string::npos);
  CHECK(r["output"][1]["type"] == "message");
  CHECK(output_text(r).find("think>") == std::string::npos);
  CHECK(r["usage"]["output_tokens_details"]["reasoning_tokens"].get<int>() > 0);

  json streamed_body = body;
  streamed_body["stream"] = true;
  const auto events = response_events(post_json(s.port, "/v1/responses", streamed_body).body);
  std::string streamed_reasoning, streamed_text;
  for (const auto& e : events) {
    if (e["type"] == "response.reasoning_text.delta") streamed_reasoning += e["delta"].get<std::string>();
    if (e["type"] == "response.output_text.delta") streamed_text += e["delta"].get<std::string>();
  }
  CHECK(streamed_reasoning == reasoning);
  CHECK(streamed_text == output_text(r));
}

TEST_CASE("gateway responses: refusals are 400s naming the Responses field", "[gateway][http][responses]") {
  if (!has_stories()) return;
  auto d = stories_deployment();
  d.server.responses_store_max = 1;
  served s(d);
  const auto refused = [&](const json& body, const std::string& param) {
    auto a = post_json(s.port, "/v1/responses", body);
    CHECK(a.status == 400);
    CHECK(a.body_json()["error"]["param"] == param);
    CHECK(a.body_json()["error"]["type"] == "invalid_request_error");
  };
  refused({{"input", json::parse(R"([{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}])")}},
          "input[0].content[0].type");
  refused({{"input", "x"}, {"tools", json::parse(R"([{"type": "file_search", "vector_store_ids": []}])")}}, "tools[0].type");
  refused({{"input", "x"}, {"max_output_tokens", 0}}, "max_output_tokens");
  refused({{"input", "x"}, {"temperature", "hot"}}, "temperature");
  refused({{"input", "x"}, {"previous_response_id", 3}}, "previous_response_id");
  refused({{"input", "x"}, {"tools", json::parse(R"([{"type": "function", "name": "bad name!"}])")}}, "tools[0].name");
  CHECK(post_json(s.port, "/v1/responses", {{"model", "gpt-5"}, {"input", "x"}}).status == 404);
  CHECK(get(s.port, "/v1/responses").status == 405);
  // One stored response at a time: the older one is forgotten.
  const auto a = post_json(s.port, "/v1/responses", {{"input", "a"}, {"max_output_tokens", 2}}).body_json();
  const auto b = post_json(s.port, "/v1/responses", {{"input", "b"}, {"max_output_tokens", 2}}).body_json();
  CHECK(get(s.port, "/v1/responses/" + a["id"].get<std::string>()).status == 404);
  CHECK(get(s.port, "/v1/responses/" + b["id"].get<std::string>()).status == 200);
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway responses: a forced call's arguments keep the property order of its parameters", "[gateway][http][responses]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  const std::string body = R"({"input": "Weather?", "max_output_tokens": 150, "tool_choice": "required",
    "parallel_tool_calls": false,
    "tools": [{"type": "function", "name": "w", "parameters": {"type": "object", "properties": {
      "zeta": {"type": "string", "maxLength": 6}, "alpha": {"type": "integer", "minimum": 0, "maximum": 99}},
      "required": ["zeta", "alpha"], "additionalProperties": false}}]})";
  auto a = http_call(s.port, http::verb::post, "/v1/responses", body);
  REQUIRE(a.status == 200);
  const json call = a.body_json()["output"].back();
  INFO(a.body);
  REQUIRE(call["type"] == "function_call");
  std::vector<std::string> keys;
  const auto arguments = nlohmann::ordered_json::parse(call["arguments"].get<std::string>());
  for (const auto& [key, value] : arguments.items()) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"zeta", "alpha"});
}

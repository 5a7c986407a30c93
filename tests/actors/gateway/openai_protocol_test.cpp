// Request parsing and response shapes of the OpenAI protocol, without sockets: a
// byte-level tokenizer (token = byte + 3, BOS 1) and a 64-token context.
#include <catch2/catch.hpp>

#include "actors/gateway/openai_request.hpp"
#include "actors/gateway/openai_response.hpp"
#include "actors/gateway/sse.hpp"
#include "actors/gateway/unsupported_fields.hpp"
#include "tests/actors/gateway/byte_model.hpp"

using namespace inflight;
using namespace inflight::gateway;
using nlohmann::json;

namespace {

served_model byte_model() { return test::byte_model({.max_context = 64, .request_timeout_s = 30.0}); }

struct bad_case {
  const char* body;
  api_kind kind;
  int status;
  const char* param;
};

}  // namespace

TEST_CASE("openai protocol: malformed bodies are 400 with a code", "[gateway][protocol]") {
  CHECK(try_parse_json("{\"prompt\": \"a\"}").has_value());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"prompt\": ", "invalid_json"},           // truncated
      {"not json", "invalid_json"},
      {"", "invalid_json"},
      {"{\"prompt\": \"a\xff\"}", "invalid_utf8"},  // a byte that is never UTF-8
      {"{\"prompt\": \"\xc3\"}", "invalid_utf8"},    // a truncated two-byte character
  };
  for (const auto& [body, code] : cases) {
    auto r = try_parse_json(body);
    INFO(body);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().status == 400);
    CHECK(r.error().code == code);
  }
  // Copying or dumping a value recurses per level: 100000 levels overflowed the stack.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const auto& body : {R"({"messages": [{"role": "user", "content": )" + deep + "}]}", R"({"prompt": )" + deep + "}",
                           "{\"a\": \"[[[[\", \"prompt\": " + std::string(65, '[') + std::string(65, ']') + "}"}) {
    auto r = try_parse_json(body);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().status == 400);
    CHECK(r.error().code == "json_too_deep");
  }
  // Brackets inside strings do not count; 64 levels are accepted.
  CHECK(try_parse_json("{\"prompt\": \"" + std::string(1000, '[') + "\"}").has_value());
  CHECK(try_parse_json("{\"prompt\": " + std::string(63, '[') + std::string(63, ']') + "}").has_value());
  auto array = try_parse_json("[1, 2]");
  REQUIRE_FALSE(array.has_value());
  CHECK(array.error().message.find("JSON object") != std::string::npos);
}

TEST_CASE("openai protocol: wrong types and out-of-range values name the field", "[gateway][protocol]") {
  const auto m = byte_model();
  const std::string long_prompt(100, 'a');
  const std::vector<bad_case> cases = {
      {R"({"prompt": 5})", api_kind::completion, 400, "prompt"},
      {R"({"prompt": []})", api_kind::completion, 400, "prompt"},
      {R"({"prompt": [1, "a"]})", api_kind::completion, 400, "prompt"},
      {R"({"prompt": [9999]})", api_kind::completion, 400, "prompt"},
      {R"({"prompt": [[]]})", api_kind::completion, 400, "prompt"},
      {R"({"max_tokens": 4})", api_kind::completion, 400, "prompt"},
      {R"({"prompt": "a", "max_tokens": -1})", api_kind::completion, 400, "max_tokens"},
      {R"({"prompt": "a", "max_tokens": 0})", api_kind::completion, 400, "max_tokens"},
      {R"({"prompt": "a", "max_tokens": "16"})", api_kind::completion, 400, "max_tokens"},
      {R"({"prompt": "a", "max_tokens": 1.5})", api_kind::completion, 400, "max_tokens"},
      {R"({"prompt": "a", "max_tokens": 1e300})", api_kind::completion, 400, "max_tokens"},
      {R"({"prompt": "a", "max_tokens": 99999999999999999999})", api_kind::completion, 400, "max_tokens"},
      {R"({"prompt": "a", "n": 0})", api_kind::completion, 400, "n"},
      {R"({"prompt": "a", "n": 1000000})", api_kind::completion, 400, "n"},
      {R"({"prompt": ["a", "b"], "n": 100})", api_kind::completion, 400, "n"},
      {R"({"prompt": "a", "temperature": "hot"})", api_kind::completion, 400, "temperature"},
      {R"({"prompt": "a", "temperature": -1})", api_kind::completion, 400, "temperature"},
      {R"({"prompt": "a", "temperature": 1e308})", api_kind::completion, 400, "temperature"},
      {R"({"prompt": "a", "top_p": 0})", api_kind::completion, 400, "top_p"},
      {R"({"prompt": "a", "top_k": -2})", api_kind::completion, 400, "top_k"},
      {R"({"prompt": "a", "presence_penalty": 5})", api_kind::completion, 400, "presence_penalty"},
      {R"({"prompt": "a", "stop": 5})", api_kind::completion, 400, "stop"},
      {R"({"prompt": "a", "stop": [""]})", api_kind::completion, 400, "stop"},
      {R"({"prompt": "a", "stop_token_ids": [-1]})", api_kind::completion, 400, "stop_token_ids"},
      {R"({"prompt": "a", "stream": "yes"})", api_kind::completion, 400, "stream"},
      {R"({"prompt": "a", "stream_options": 1})", api_kind::completion, 400, "stream_options"},
      {R"({"prompt": "a", "logprobs": 21})", api_kind::completion, 400, "logprobs"},
      {R"({"prompt": "a", "seed": "x"})", api_kind::completion, 400, "seed"},
      {R"({"prompt": "a", "user": 3})", api_kind::completion, 400, "user"},
      {R"({"prompt": "a", "model": "gpt-4"})", api_kind::completion, 404, "model"},
      {R"({"prompt": "a"})", api_kind::chat, 400, "messages"},
      {R"({"messages": []})", api_kind::chat, 400, "messages"},
      {R"({"messages": [{"role": 1, "content": "x"}]})", api_kind::chat, 400, "messages[0].role"},
      {R"({"messages": [{"role": "user", "content": 7}]})", api_kind::chat, 400, "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 1})", api_kind::chat, 400, "logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", api_kind::chat, 400, "top_logprobs"},
  };
  for (const auto& c : cases) {
    INFO(c.body);
    auto r = try_parse_request(json::parse(c.body), c.kind, m);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().status == c.status);
    CHECK(r.error().param == c.param);
    CHECK_FALSE(r.error().message.empty());
  }
  auto too_long = try_parse_request(json{{"prompt", long_prompt}}, api_kind::completion, m);
  REQUIRE_FALSE(too_long.has_value());
  CHECK(too_long.error().code == "context_length_exceeded");
  // 62 bytes + BOS = 63 tokens fits a 64-token context; one more does not.
  CHECK(try_parse_request(json{{"prompt", std::string(62, 'a')}}, api_kind::completion, m).has_value());
  CHECK_FALSE(try_parse_request(json{{"prompt", std::string(63, 'a')}}, api_kind::completion, m).has_value());
}

TEST_CASE("openai protocol: prompts, defaults and sampling fields", "[gateway][protocol]") {
  const auto m = byte_model();
  auto one = try_parse_request(json{{"prompt", "ab"}, {"unknown_field", {1, 2}}, {"temperature", nullptr}},
                               api_kind::completion, m);
  REQUIRE(one.has_value());
  CHECK(one->prompts == std::vector<std::vector<token_id>>{{1, 'a' + 3, 'b' + 3}});
  CHECK(one->base.params.max_tokens == 16);  // OpenAI's completions default
  CHECK(one->base.params.temperature == 1.0f);
  CHECK(one->base.timeout_s == 30.0);
  CHECK_FALSE(one->stream);

  auto many = try_parse_request(json::parse(R"({"prompt": ["a", [5, 6, 7]], "n": 3, "seed": 10,
      "temperature": 0.5, "top_k": 4, "top_p": 0.9, "min_p": 0.1, "repetition_penalty": 1.2,
      "presence_penalty": 0.5, "frequency_penalty": -0.5, "stop": "x", "stop_token_ids": [2],
      "ignore_eos": true, "priority": 3, "max_tokens": 7, "stream": true, "ttft_target_ms": 250,
      "tpot_target_ms": 40.5,
      "stream_options": {"include_usage": true}, "logprobs": 0, "echo": true})"),
                                api_kind::completion, m);
  REQUIRE(many.has_value());
  CHECK(many->num_choices() == 6);
  CHECK(many->choice_request(0).prompt == std::vector<token_id>{1, 'a' + 3});
  CHECK(many->choice_request(4).prompt == std::vector<token_id>{5, 6, 7});
  CHECK(many->choice_request(0).seed == 10u);
  CHECK(many->choice_request(2).seed == 12u);  // n choices differ but stay reproducible
  CHECK(many->choice_request(3).seed == 10u);
  const auto& p = many->base.params;
  CHECK(p.temperature == 0.5f);
  CHECK(p.top_k == 4);
  CHECK(p.top_p == 0.9f);
  CHECK(p.min_p == 0.1f);
  CHECK(p.repetition_penalty == 1.2f);
  CHECK(p.frequency_penalty == -0.5f);
  CHECK(p.stop_token_ids == std::vector<token_id>{2});
  CHECK(p.ignore_eos);
  CHECK(p.max_tokens == 7);
  CHECK(many->base.stop == std::vector<std::string>{"x"});
  CHECK(many->base.priority == 3);
  CHECK(many->base.targets.ttft_ms == 250.0);
  CHECK(many->base.targets.tpot_ms == 40.5);
  CHECK(many->choice_request(4).targets.ttft_ms == 250.0);
  CHECK(one->base.targets.ttft_ms == 0.0);  // none: the deployment's default applies
  for (const char* bad : {R"({"prompt": "a", "ttft_target_ms": -1})", R"({"prompt": "a", "tpot_target_ms": "fast"})"}) {
    auto refused = try_parse_request(json::parse(bad), api_kind::completion, m);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().param.find("target_ms") != std::string::npos);
  }
  CHECK(many->stream);
  CHECK(many->include_usage);
  CHECK(many->echo);
  CHECK(many->has_logprobs);          // logprobs: 0 = the chosen token's logprob only
  CHECK(many->num_top_logprobs == 0);
  CHECK(p.logprobs == 1);

  auto chat = try_parse_request(json::parse(R"({"messages": [{"role": "user", "content": "hi"}],
      "logprobs": true, "top_logprobs": 3, "model": "dummy"})"),
                                api_kind::chat, m);
  REQUIRE(chat.has_value());
  const auto text = render_plain_chat(std::vector<chat_message>{{"user", "hi"}}, true);
  CHECK(text == "user: hi\nassistant:");
  REQUIRE(chat->prompts.size() == 1);
  CHECK(chat->prompts[0] == tokenize_text(m, text));
  // A chat generates until EOS or the end of the context by default.
  CHECK(chat->base.params.max_tokens == m.max_context - int(chat->prompts[0].size()));
  CHECK(chat->num_top_logprobs == 3);
  CHECK(chat->base.params.logprobs == 3);

  auto parts = try_parse_request(json::parse(R"({"type": "generate", "id": 1, "messages": [{"role": "system",
      "content": [{"type": "text", "text": "be "}, {"type": "text", "text": "brief"}]}, {"role": "user", "content": "x"}],
      "max_completion_tokens": 5})"),
                                 api_kind::websocket, m);
  REQUIRE(parts.has_value());
  CHECK(parts->is_chat);
  CHECK(parts->prompts[0] == tokenize_text(m, "system: be brief\nuser: x\nassistant:"));
  auto ws_prompt = try_parse_request(json{{"prompt", "x"}}, api_kind::websocket, m);
  REQUIRE(ws_prompt.has_value());
  CHECK_FALSE(ws_prompt->is_chat);
}

TEST_CASE("openai protocol: tokenize and detokenize bodies", "[gateway][protocol]") {
  const auto m = byte_model();
  auto ids = try_parse_tokenize(json{{"prompt", "hi"}}, m);
  REQUIRE(ids.has_value());
  CHECK(*ids == std::vector<token_id>{1, 'h' + 3, 'i' + 3});
  auto bare = try_parse_tokenize(json{{"prompt", "hi"}, {"add_special_tokens", false}}, m);
  REQUIRE(bare.has_value());
  CHECK(*bare == std::vector<token_id>{'h' + 3, 'i' + 3});
  auto back = try_parse_detokenize(json{{"tokens", *ids}}, m);
  REQUIRE(back.has_value());
  CHECK(detokenize(m, *back) == "hi");
  CHECK_FALSE(try_parse_detokenize(json{{"tokens", "hi"}}, m).has_value());
  CHECK_FALSE(try_parse_detokenize(json{{"tokens", {100000}}}, m).has_value());
  CHECK_FALSE(try_parse_tokenize(json::object(), m).has_value());
}

TEST_CASE("openai protocol: errc maps to one HTTP status each", "[gateway][protocol]") {
  CHECK(to_api_error({errc::invalid_argument, "x"}).status == 400);
  CHECK(to_api_error({errc::not_found, "x"}).status == 404);
  // Each condition keeps its own meaning at the edge.
  CHECK(to_api_error({errc::queue_full, "x"}).status == 429);
  CHECK(to_api_error({errc::queue_full, "x"}).code == "queue_full");
  CHECK(to_api_error({errc::queue_timeout, "x"}).status == 429);
  CHECK(to_api_error({errc::queue_timeout, "x"}).code == "queue_timeout");
  CHECK(to_api_error({errc::shutting_down, "x"}).status == 503);
  CHECK(to_api_error({errc::shutting_down, "x"}).code == "shutting_down");
  CHECK(to_api_error({errc::out_of_memory, "x"}).status == 500);
  CHECK(to_api_error({errc::out_of_memory, "x"}).code == "out_of_memory");
  CHECK(to_api_error({errc::unsupported, "x"}).status == 400);
  CHECK(to_api_error({errc::unsupported, "x"}).code == "unsupported");
  CHECK(to_api_error({errc::timeout, "x"}).status == 504);
  CHECK(to_api_error({errc::internal, "x"}).status == 500);
  CHECK(to_api_error({errc::backend_error, "x"}).status == 500);
  const json body = error_body(bad_request("max_tokens must be at least 1", "max_tokens"));
  CHECK(body == json::parse(R"({"error": {"message": "max_tokens must be at least 1",
      "type": "invalid_request_error", "param": "max_tokens", "code": null}})"));
}

TEST_CASE("openai protocol: SSE framing", "[gateway][protocol][sse]") {
  CHECK(sse_event(json{{"a", 1}}) == "data: {\"a\":1}\n\n");
  CHECK(sse_event(json{{"t", std::string("\xe4\xbd")}}) == "data: {\"t\":\"\xef\xbf\xbd\"}\n\n");  // half a character
  auto parts = try_split_sse("data: {\"a\":1}\n\ndata: [DONE]\n\n");
  REQUIRE(parts.has_value());
  CHECK(*parts == std::vector<std::string>{"{\"a\":1}", "[DONE]"});
  CHECK_FALSE(try_split_sse("data: x\n").has_value());
  CHECK_FALSE(try_split_sse("data: x\r\n\r\n").has_value());
  CHECK_FALSE(try_split_sse("event: x\n\n").has_value());
  CHECK_FALSE(try_split_sse("data: x\ndata: y\n\n").has_value());
}

TEST_CASE("openai protocol: response and chunk shapes", "[gateway][protocol]") {
  const response_meta meta{"cmpl-1", 42, "dummy"};
  const json chunk = completion_chunk(meta, 2, "hi", nullptr, nullptr);
  CHECK(chunk == json::parse(R"({"id": "cmpl-1", "object": "text_completion", "created": 42, "model": "dummy",
      "choices": [{"index": 2, "text": "hi", "logprobs": null, "finish_reason": null}]})"));
  const json chat = chat_chunk(meta, 0, json::object(), nullptr, "length");
  CHECK(chat["object"] == "chat.completion.chunk");
  CHECK(chat["choices"][0]["finish_reason"] == "length");
  CHECK(chat["choices"][0]["delta"] == json::object());
  const json usage = usage_chunk(meta, true, usage_json(3, 4));
  CHECK(usage["choices"] == json::array());
  CHECK(usage["usage"] == json::parse(R"({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7,
                                           "prompt_tokens_details": {"cached_tokens": 0}})"));
  CHECK(usage_json(30, 4, 16)["prompt_tokens_details"]["cached_tokens"] == 16);
  const json full = chat_response(meta, {{"a", nullptr, "stop"}, {"b", nullptr, "length"}}, usage_json(1, 2));
  CHECK(full["object"] == "chat.completion");
  CHECK(full["choices"][1]["index"] == 1);
  CHECK(full["choices"][1]["message"] == json::parse(R"({"role": "assistant", "content": "b", "refusal": null})"));
  choice_result calls{"", nullptr, "tool_calls"};
  calls.is_content_null = true;
  calls.tool_calls = json::array({tool_call_json("call_1", "f", "{\"a\":1}")});
  const json with_calls = chat_response(meta, {calls}, usage_json(1, 2));
  CHECK(with_calls["choices"][0]["message"] == json::parse(R"({"role": "assistant", "content": null, "refusal": null,
      "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]})"));
  CHECK(with_calls["choices"][0]["finish_reason"] == "tool_calls");
  CHECK(tool_call_delta(0, "call_1", "f", "") == json::parse(R"({"tool_calls": [{"index": 0, "id": "call_1",
      "type": "function", "function": {"name": "f", "arguments": ""}}]})"));
  CHECK(tool_call_delta(1, "", std::nullopt, "{\"a\"") == json::parse(R"({"tool_calls": [{"index": 1,
      "function": {"arguments": "{\"a\""}}]})"));
  CHECK(chat_role_delta() == json::parse(R"({"role": "assistant", "content": "", "refusal": null})"));
  CHECK(full["choices"][1]["logprobs"].is_null());
  const json with_lp = chat_response(meta, {{"a", json::array(), "stop"}}, usage_json(1, 1));
  CHECK(with_lp["choices"][0]["logprobs"] == json::parse(R"({"content": [], "refusal": null})"));
  CHECK(full["choices"][0]["finish_reason"] == "stop");
  CHECK(std::string(finish_name(finish_reason::aborted)) == "abort");
  CHECK(std::string(metrics_label(finish_reason::cancelled)) == "abort");
  CHECK(make_response_id("cmpl-").size() == 5 + 24);
  CHECK(make_response_id("cmpl-") != make_response_id("cmpl-"));

  const auto m = byte_model();
  sampled_token t;
  t.token = 'h' + 3;
  t.logprob = -0.5f;
  t.top_logprobs = {{'h' + 3, -0.5f}, {'x' + 3, -1.5f}, {'y' + 3, -2.0f}};
  const json lp = completion_logprobs(m, 1, {t, t}, 2, 10);
  CHECK(lp["tokens"] == json::array({"h", "h"}));
  CHECK(lp["text_offset"] == json::array({10, 11}));
  CHECK(lp["top_logprobs"][0].size() == 2);
  const json content = chat_logprobs_content(m, 1, {t}, 1);
  CHECK(content[0]["bytes"] == json::array({int('h')}));
  CHECK(content[0]["top_logprobs"].size() == 1);
}

TEST_CASE("openai protocol: known fields inflight does not implement are 400 unsupported, naming them",
          "[gateway][protocol][unsupported]") {
  const auto m = byte_model();
  const json completion = {{"prompt", "a"}};
  const json chat = {{"messages", {{{"role", "user"}, {"content", "x"}}}}};
  struct refused_case {
    const char* field;
    json value;
    bool is_chat;
  };
  const std::vector<refused_case> refused = {
      {"suffix", "the end", false},
      {"best_of", 2, false},
      {"use_beam_search", true, false},
      {"use_beam_search", true, true},
      {"prompt_logprobs", 0, false},
      {"min_tokens", 4, true},
      {"include_stop_str_in_output", true, false},
      {"skip_special_tokens", false, true},
      {"truncate_prompt_tokens", 8, false},
      {"allowed_token_ids", {1, 2}, false},
      {"bad_words", {"x"}, true},
      {"return_tokens_as_token_ids", true, true},
      {"echo", true, true},
      {"modalities", {"text", "audio"}, true},
      {"audio", {{"voice", "alloy"}, {"format", "wav"}}, true},
      {"web_search_options", json::object(), true},
      {"functions", {{{"name", "f"}}}, true},
      {"function_call", {{"name", "f"}}, true},
  };
  for (const auto& c : refused) {
    INFO(c.field << " = " << c.value.dump() << (c.is_chat ? " (chat)" : " (completions)"));
    json body = c.is_chat ? chat : completion;
    body[c.field] = c.value;
    auto r = try_parse_request(body, c.is_chat ? api_kind::chat : api_kind::completion, m);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().status == 400);
    CHECK(r.error().type == "invalid_request_error");
    CHECK(r.error().code == "unsupported");
    CHECK(r.error().param == c.field);
    CHECK_THAT(r.error().message, Catch::Contains(c.field));
    // The same over the WebSocket, which parses both shapes.
    auto ws = try_parse_request(body, api_kind::websocket, m);
    REQUIRE_FALSE(ws.has_value());
    CHECK(ws.error().code == "unsupported");
  }
  // Values that ask for nothing inflight lacks are accepted; unknown fields are ignored.
  const std::vector<std::pair<const char*, json>> accepted_completion = {
      {"suffix", ""},       {"suffix", nullptr},    {"best_of", 1},           {"use_beam_search", false},
      {"min_tokens", 0},    {"skip_special_tokens", true}, {"bad_words", json::array()}, {"prompt_logprobs", nullptr},
      {"length_penalty", 1.0}, {"no_such_field", {{"x", 1}}}, {"store", true}, {"metadata", {{"k", "v"}}}};
  for (const auto& [name, value] : accepted_completion) {
    INFO(name << " = " << value.dump());
    json body = completion;
    body[name] = value;
    CHECK(try_parse_request(body, api_kind::completion, m).has_value());
  }
  const std::vector<std::pair<const char*, json>> accepted_chat = {
      {"modalities", {"text"}}, {"audio", nullptr}, {"echo", false}, {"function_call", "none"},
      {"functions", json::array()}, {"chat_template_kwargs", json::object()}, {"service_tier", "auto"},
      {"suffix", "ignored: a completions field"}, {"best_of", 1}};
  for (const auto& [name, value] : accepted_chat) {
    INFO(name << " = " << value.dump());
    json body = chat;
    body[name] = value;
    CHECK(try_parse_request(body, api_kind::chat, m).has_value());
  }
  CHECK_FALSE(unsupported_fields().empty());
}

TEST_CASE("openai protocol: add_special_tokens (completions) leaves out the BOS", "[gateway][protocol]") {
  const auto m = byte_model();
  auto with = try_parse_request(json{{"prompt", "ab"}}, api_kind::completion, m);
  auto without = try_parse_request(json{{"prompt", "ab"}, {"add_special_tokens", false}}, api_kind::completion, m);
  REQUIRE(with.has_value());
  REQUIRE(without.has_value());
  CHECK(with->prompts[0] == std::vector<token_id>{1, 'a' + 3, 'b' + 3});
  CHECK(without->prompts[0] == std::vector<token_id>{'a' + 3, 'b' + 3});
  CHECK_FALSE(try_parse_request(json{{"prompt", "ab"}, {"add_special_tokens", "no"}}, api_kind::completion, m).has_value());
}

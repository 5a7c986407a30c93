// WebSocket frames parsed and checked without a socket (actors/gateway/ws_message.*):
// the decisions ws_session takes on each frame before anything reaches the engine.
#include <catch2/catch.hpp>

#include "actors/gateway/ws_message.hpp"
#include "tests/actors/gateway/byte_model.hpp"

using namespace inflight;
using namespace inflight::gateway;
using inflight::test::byte_model;
using nlohmann::json;

TEST_CASE("ws message: generate, rerank, embed and cancel with string or integer ids", "[gateway][ws]") {
  auto gen = try_parse_ws_message(R"({"type": "generate", "id": "a", "prompt": "x"})", true);
  REQUIRE(gen.has_value());
  CHECK(gen->type == ws_message_type::generate);
  CHECK(gen->id == "a");
  CHECK(gen->body["prompt"] == "x");
  auto rerank = try_parse_ws_message(R"({"type": "rerank", "id": "r", "query": "q", "documents": ["d"]})", true);
  REQUIRE(rerank.has_value());
  CHECK(rerank->type == ws_message_type::rerank);
  CHECK(rerank->body["query"] == "q");
  auto embed = try_parse_ws_message(R"({"type": "embed", "id": "e", "input": ["a", "b"]})", true);
  REQUIRE(embed.has_value());
  CHECK(embed->type == ws_message_type::embed);
  CHECK(embed->body["input"].size() == 2);

  auto cancel = try_parse_ws_message(R"({"type": "cancel", "id": 7})", true);
  REQUIRE(cancel.has_value());
  CHECK(cancel->type == ws_message_type::cancel);
  CHECK(cancel->id == 7);
  // The id 7 and the id "7" are two different requests.
  auto quoted = try_parse_ws_message(R"({"type": "cancel", "id": "7"})", true);
  REQUIRE(quoted.has_value());
  CHECK(quoted->key != cancel->key);
}

TEST_CASE("ws message: bad frames are errors with the id to answer under", "[gateway][ws]") {
  struct bad_case {
    std::string text;
    bool is_text;
    json id;
    const char* code;
  };
  const std::vector<bad_case> cases = {
      {R"({"type": "generate", "id": "a"})", false, nullptr, "binary_frame"},
      {"{\"type\": ", true, nullptr, "invalid_json"},
      {"[1]", true, nullptr, ""},
      {R"({"type": "generate", "prompt": "x"})", true, nullptr, "missing_id"},
      {R"({"type": "generate", "id": 1.5})", true, 1.5, "missing_id"},
      {R"({"type": "generate", "id": {"k": [1]}})", true, json{{"k", {1}}}, "missing_id"},
      {R"({"type": "stop", "id": "a"})", true, "a", "unknown_type"},
      {R"({"id": 3})", true, 3, "unknown_type"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto r = try_parse_ws_message(c.text, c.is_text);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().id == c.id);
    CHECK(r.error().error.status == 400);
    CHECK(r.error().error.code == c.code);
    const auto msg = ws_error_message(r.error().id, r.error().error);
    CHECK(msg["type"] == "error");
    CHECK(msg["id"] == c.id);
    CHECK(msg["error"]["message"].is_string());
  }
}

TEST_CASE("ws message: a generate body becomes one engine request", "[gateway][ws]") {
  const auto m = byte_model();
  auto ok = try_parse_ws_generate(json{{"prompt", "ab"}, {"max_tokens", 3}, {"logprobs", 2}}, m);
  REQUIRE(ok.has_value());
  CHECK(ok->prompts.at(0) == std::vector<token_id>{1, 'a' + 3, 'b' + 3});
  CHECK(ok->stream);  // a WebSocket generation always streams
  CHECK(ok->base.params.max_tokens == 3);
  CHECK(ok->has_logprobs);
  CHECK(ok->num_top_logprobs == 2);
  auto n = try_parse_ws_generate(json{{"prompt", "ab"}, {"n", 2}}, m);
  REQUIRE_FALSE(n.has_value());
  CHECK(n.error().param == "n");
  auto two = try_parse_ws_generate(json{{"prompt", {"a", "b"}}}, m);
  REQUIRE_FALSE(two.has_value());
  auto bad = try_parse_ws_generate(json{{"prompt", "ab"}, {"temperature", "hot"}}, m);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().param == "temperature");
}

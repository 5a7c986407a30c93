// Parsing and response shapes of /v1/rerank and /v1/score, without sockets: a
// byte-level tokenizer (token = byte + 3, BOS 1), the words "y" / "n" (one byte each),
// a short template and a 64-token context.
#include <catch2/catch.hpp>

#include "actors/gateway/score_request.hpp"
#include "actors/gateway/score_response.hpp"
#include "tests/actors/gateway/byte_model.hpp"

using namespace inflight;
using namespace inflight::gateway;
using inflight::test::byte_ids;
using nlohmann::json;

namespace {

// BOS + "Q:<query>\n" is the prefix; "D:<document>\nA:" the document part.
served_model scoring_model(int max_documents = 8) {
  rerank_settings s;
  s.prompt_template = "Q:{query}\nD:{document}\nA:";
  s.yes_word = "y";
  s.no_word = "n";
  s.max_documents = max_documents;
  auto m = test::byte_model({.has_grammars = false});
  test::serve_reranking(m, s);
  return m;
}

api_error parse_error(const json& body, bool is_rerank, const served_model& m) {
  auto r = is_rerank ? try_parse_rerank(body, m) : try_parse_score(body, m);
  REQUIRE_FALSE(r.has_value());
  return r.error();
}

const response_meta meta{"rerank-test", 1700000000, "dummy"};

}  // namespace

TEST_CASE("rerank: documents as strings or {text} objects become one prompt each", "[gateway][score]") {
  const auto m = scoring_model();
  auto r = try_parse_rerank(json::parse(R"({"model": "dummy", "query": "ab",
      "documents": ["xyz", {"text": "w"}, ""], "top_n": 2, "return_documents": false})"), m);
  REQUIRE(r.has_value());
  CHECK(r->api == score_api::rerank);
  REQUIRE(r->num_pairs() == 3);
  CHECK(r->prompts[0] == byte_ids("Q:ab\nD:xyz\nA:"));
  CHECK(r->prompts[1] == byte_ids("Q:ab\nD:w\nA:"));
  CHECK(r->prompts[2] == byte_ids("Q:ab\nD:\nA:"));
  CHECK(r->documents == std::vector<std::string>{"xyz", "w", ""});
  CHECK(r->top_n == 2);
  CHECK_FALSE(r->return_documents);
  CHECK(r->num_prompt_tokens() == 14 + 12 + 11);
  // Defaults: every result, with its document.
  auto d = try_parse_rerank(json::parse(R"({"query": "q", "documents": ["a"]})"), m);
  REQUIRE(d.has_value());
  CHECK(d->top_n == 0);
  CHECK(d->return_documents);
}

TEST_CASE("rerank response: sorted by score, cut to top_n, documents when asked, usage", "[gateway][score]") {
  const auto m = scoring_model();
  auto r = try_parse_rerank(json::parse(R"({"query": "ab", "documents": ["d0", "d1", "d2", "d3"]})"), m);
  REQUIRE(r.has_value());
  const std::vector<double> scores = {0.25, 0.9, 0.25, 0.5};
  auto all = rerank_response(meta, *r, scores);
  CHECK(all["id"] == "rerank-test");
  CHECK(all["model"] == "dummy");
  CHECK(all["usage"]["prompt_tokens"] == r->num_prompt_tokens());
  CHECK(all["usage"]["total_tokens"] == r->num_prompt_tokens());
  REQUIRE(all["results"].size() == 4);
  // Highest first; the tie keeps the input order.
  std::vector<int> order;
  for (const auto& item : all["results"]) order.push_back(item["index"]);
  CHECK(order == std::vector<int>{1, 3, 0, 2});
  CHECK(all["results"][0]["relevance_score"] == 0.9);
  CHECK(all["results"][0]["document"]["text"] == "d1");
  CHECK(all["results"][3]["document"]["text"] == "d2");

  r->top_n = 2;
  r->return_documents = false;
  auto top = rerank_response(meta, *r, scores);
  REQUIRE(top["results"].size() == 2);
  CHECK(top["results"][1]["index"] == 3);
  CHECK_FALSE(top["results"][0].contains("document"));
  CHECK(top["usage"]["prompt_tokens"] == r->num_prompt_tokens());  // every document was scored
  r->top_n = 10;  // more than there are: all of them
  CHECK(rerank_response(meta, *r, scores)["results"].size() == 4);
  CHECK(all["usage"]["prompt_tokens_details"]["cached_tokens"] == 0);
  CHECK(rerank_response(meta, *r, scores, 7)["usage"]["prompt_tokens_details"]["cached_tokens"] == 7);
}

TEST_CASE("score: 1:1, 1:N and N:N pairs, data in input order", "[gateway][score]") {
  const auto m = scoring_model();
  auto one = try_parse_score(json::parse(R"({"text_1": "q", "text_2": "d"})"), m);
  REQUIRE(one.has_value());
  REQUIRE(one->num_pairs() == 1);
  CHECK(one->prompts[0] == byte_ids("Q:q\nD:d\nA:"));

  auto fan = try_parse_score(json::parse(R"({"text_1": ["q"], "text_2": ["d0", "d1", "d2"]})"), m);
  REQUIRE(fan.has_value());
  REQUIRE(fan->num_pairs() == 3);
  CHECK(fan->prompts[2] == byte_ids("Q:q\nD:d2\nA:"));

  auto pairs = try_parse_score(json::parse(R"({"text_1": ["q0", "q1"], "text_2": ["d0", "d1"]})"), m);
  REQUIRE(pairs.has_value());
  REQUIRE(pairs->num_pairs() == 2);
  CHECK(pairs->prompts[0] == byte_ids("Q:q0\nD:d0\nA:"));
  CHECK(pairs->prompts[1] == byte_ids("Q:q1\nD:d1\nA:"));

  const response_meta score_meta{"score-test", 1700000000, "dummy"};
  auto body = score_response(score_meta, *pairs, {0.75, 0.125});
  CHECK(body["id"] == "score-test");
  CHECK(body["object"] == "list");
  CHECK(body["created"] == 1700000000);
  CHECK(body["model"] == "dummy");
  REQUIRE(body["data"].size() == 2);
  CHECK(body["data"][0] == json{{"index", 0}, {"object", "score"}, {"score", 0.75}});
  CHECK(body["data"][1]["score"] == 0.125);
  CHECK(body["usage"]["prompt_tokens"] == pairs->num_prompt_tokens());
  CHECK(body["usage"]["total_tokens"] == pairs->num_prompt_tokens());
  CHECK(body["usage"]["completion_tokens"] == 0);
  CHECK(score_response(score_meta, *pairs, {0.75, 0.125}, 5)["usage"]["prompt_tokens_details"]["cached_tokens"] == 5);
}

TEST_CASE("scoring: every bad input is a 400 naming its field", "[gateway][score]") {
  const auto m = scoring_model(3);
  const std::string long_doc(80, 'x');
  struct bad {
    json body;
    bool is_rerank;
    const char* param;
    const char* code;
  };
  const std::vector<bad> cases = {
      {json::parse(R"({"documents": ["a"]})"), true, "query", ""},
      {json::parse(R"({"query": 5, "documents": ["a"]})"), true, "query", ""},
      {json::parse(R"({"query": "q"})"), true, "documents", ""},
      {json::parse(R"({"query": "q", "documents": []})"), true, "documents", ""},
      {json::parse(R"({"query": "q", "documents": "a"})"), true, "documents", ""},
      {json::parse(R"({"query": "q", "documents": ["a", 5]})"), true, "documents", ""},
      {json::parse(R"({"query": "q", "documents": [{"title": "a"}]})"), true, "documents", ""},
      {json::parse(R"({"query": "q", "documents": ["a", "b", "c", "d"]})"), true, "documents", "too_many_documents"},
      {json{{"query", "q"}, {"documents", {"a", long_doc}}}, true, "documents", "context_length_exceeded"},
      {json::parse(R"({"query": "q", "documents": ["a"], "top_n": -1})"), true, "top_n", ""},
      {json::parse(R"({"query": "q", "documents": ["a"], "top_n": "2"})"), true, "top_n", ""},
      {json::parse(R"({"query": "q", "documents": ["a"], "return_documents": 1})"), true, "return_documents", ""},
      {json::parse(R"({"query": "q", "documents": ["a"], "cache_salt": 5})"), true, "cache_salt", ""},
      {json::parse(R"({"text_1": "q", "text_2": "d", "cache_salt": ""})"), false, "cache_salt", ""},
      {json::parse(R"({"text_2": "d"})"), false, "text_1", ""},
      {json::parse(R"({"text_1": "q"})"), false, "text_2", ""},
      {json::parse(R"({"text_1": [], "text_2": "d"})"), false, "text_1", ""},
      {json::parse(R"({"text_1": "q", "text_2": [1]})"), false, "text_2", ""},
      {json::parse(R"({"text_1": ["a", "b"], "text_2": ["c"]})"), false, "text_2", ""},
      {json::parse(R"({"text_1": ["a", "b"], "text_2": ["c", "d", "e"]})"), false, "text_2", ""},
      {json::parse(R"({"text_1": "q", "text_2": ["a", "b", "c", "d"]})"), false, "text_2", "too_many_documents"},
      {json{{"text_1", "q"}, {"text_2", long_doc}}, false, "text_2", "context_length_exceeded"},
  };
  for (const auto& c : cases) {
    INFO(c.body.dump());
    const auto e = parse_error(c.body, c.is_rerank, m);
    CHECK(e.status == 400);
    CHECK(e.type == "invalid_request_error");
    CHECK(e.param == c.param);
    CHECK(e.code == c.code);
  }
  // The limit is named in the message.
  const auto many = parse_error(json::parse(R"({"query": "q", "documents": ["a", "b", "c", "d"]})"), true, m);
  CHECK_THAT(many.message, Catch::Contains("rerank.max_documents") && Catch::Contains("4"));
  const auto invalid = parse_error(json{{"query", "q"}, {"documents", {std::string("a\xff")}}}, true, m);
  CHECK(invalid.code == "invalid_utf8");
  // A prompt of exactly the context fits: no token is generated.
  const std::string fits(64 - int(byte_ids("Q:q\nD:\nA:").size()), 'x');
  CHECK(try_parse_rerank(json{{"query", "q"}, {"documents", {fits}}}, m).has_value());
  CHECK_FALSE(try_parse_rerank(json{{"query", "q"}, {"documents", {fits + "x"}}}, m).has_value());
}

TEST_CASE("scoring: another model name is a 404, a model without rerank a 400 that says why", "[gateway][score]") {
  const auto m = scoring_model();
  const auto e = parse_error(json::parse(R"({"model": "other", "query": "q", "documents": ["a"]})"), true, m);
  CHECK(e.status == 404);
  CHECK(e.code == "model_not_found");
  auto off = m;
  off.rerank = nullptr;
  off.rerank_unavailable = "reranking is disabled on this server (rerank.enabled = false)";
  for (const bool is_rerank : {true, false}) {
    const auto u = parse_error(json::parse(R"({"query": "q", "documents": ["a"], "text_1": "q", "text_2": "d"})"),
                               is_rerank, off);
    CHECK(u.status == 400);
    CHECK(u.code == "rerank_unavailable");
    CHECK(u.message == off.rerank_unavailable);
  }
}

TEST_CASE("rerank and score: a LoRA adapter's name as the model runs the pairs through it", "[gateway][score][lora]") {
  auto m = scoring_model();
  m.adapters = [] { return std::vector<std::string>{"sql"}; };
  const auto rerank = try_parse_rerank(json::parse(R"({"model": "sql", "query": "a", "documents": ["b"]})"), m);
  REQUIRE(rerank.has_value());
  CHECK(rerank->adapter == "sql");
  const auto score = try_parse_score(json::parse(R"({"model": "sql", "text_1": "a", "text_2": ["b", "c"]})"), m);
  REQUIRE(score.has_value());
  CHECK(score->adapter == "sql");
  const auto base = try_parse_rerank(json::parse(R"({"model": "dummy", "query": "a", "documents": ["b"]})"), m);
  REQUIRE(base.has_value());
  CHECK(base->adapter.empty());
  const auto unknown = parse_error(json::parse(R"({"model": "nosql", "query": "a", "documents": ["b"]})"), true, m);
  CHECK(unknown.status == 404);
}

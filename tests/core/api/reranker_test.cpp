// The rerank prompt (template, split into a shared prefix and a document part), the
// single-token checks of the yes/no words, and the score.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/api/reranker.hpp"
#include "core/model/tokenizer/byte_tokenizer.hpp"
#include "core/model/tokenizer/llama2c_tokenizer.hpp"
#include "tests/shared_data.hpp"

using namespace inflight;

namespace {

std::shared_ptr<const tokenizer> bytes() { return std::make_shared<byte_tokenizer>(); }

/// Byte tokens (id = byte + 3) of `text`, after BOS.
std::vector<token_id> byte_ids(std::string_view text, bool with_bos) {
  std::vector<token_id> ids;
  if (with_bos) ids.push_back(byte_tokenizer::bos_token);
  for (const unsigned char c : text) ids.push_back(token_id(c) + byte_tokenizer::byte_offset);
  return ids;
}

rerank_settings single_byte_words() {
  rerank_settings s;
  s.yes_word = "y";
  s.no_word = "n";
  return s;
}

}  // namespace

TEST_CASE("the default template is Qwen3-Reranker's prompt, split before the document line", "[core][rerank]") {
  const auto r = reranker::try_create(single_byte_words(), bytes());
  REQUIRE(r.has_value());
  const std::string expected_prefix =
      "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
      "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n"
      "<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n"
      "<Query>: what is paged attention?\n";
  const std::string expected_rest =
      "<Document>: KV blocks of fixed size.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
  const auto prefix = r->encode_prefix("what is paged attention?");
  CHECK(prefix == byte_ids(expected_prefix, true));
  const auto prompt = r->encode(prefix, "what is paged attention?", "KV blocks of fixed size.");
  CHECK(prompt.num_prefix_tokens == int(prefix.size()));
  CHECK(prompt.tokens == byte_ids(expected_prefix + expected_rest, true));
  CHECK(r->yes_id() == 'y' + byte_tokenizer::byte_offset);
  CHECK(r->no_id() == 'n' + byte_tokenizer::byte_offset);
  CHECK(r->score_rows() == std::array<token_id, 2>{r->yes_id(), r->no_id()});
}

TEST_CASE("every document of a query repeats the same prefix tokens", "[core][rerank]") {
  auto s = single_byte_words();
  s.prompt_template = "[{instruction}] Q={query} D={document} end";  // one line: the split is at {document}
  s.instruction = "judge";
  const auto r = reranker::try_create(s, bytes());
  REQUIRE(r.has_value());
  const auto prefix = r->encode_prefix("q1");
  CHECK(prefix == byte_ids("[judge] Q=q1 D=", true));
  for (const char* doc : {"", "a", "longer document"}) {
    const auto p = r->encode(prefix, "q1", doc);
    REQUIRE(p.tokens.size() > prefix.size());
    CHECK(std::equal(prefix.begin(), prefix.end(), p.tokens.begin()));
    CHECK(p.tokens == byte_ids(std::string("[judge] Q=q1 D=") + doc + " end", true));
  }
}

TEST_CASE("placeholders are substituted once: braces in a query or document stay text", "[core][rerank]") {
  CHECK(render_rerank_template("<{query}|{document}|{instruction}>", "I", "{document}", "{query}") ==
        "<{document}|{query}|I>");
  CHECK(render_rerank_template("{json: {query}}", "", "x", "") == "{json: x}");
}

TEST_CASE("bad templates and words are refused with the setting named", "[core][rerank]") {
  struct bad {
    const char* tmpl;
    const char* yes;
    const char* no;
    const char* expected;
  };
  const bad cases[] = {
      {"Q: {query}", "y", "n", "rerank.template"},                      // no {document}
      {"{query} {document} {document}", "y", "n", "rerank.template"},   // twice
      {"{document} {query}", "y", "n", "rerank.template"},              // the query after the document
      {"{document}", "y", "n", "rerank.template"},                      // no query at all
      {"", "yes", "n", "rerank.yes_word"},                              // 3 byte tokens
      {"", "y", "", "rerank.no_word"},                                  // no token at all
      {"", "y", "y", "same token"},
  };
  for (const auto& c : cases) {
    rerank_settings s;
    s.prompt_template = c.tmpl;
    s.yes_word = c.yes;
    s.no_word = c.no;
    auto r = reranker::try_create(s, bytes());
    INFO(c.tmpl << " / " << c.yes << " / " << c.no);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == errc::invalid_argument);
    CHECK_THAT(r.error().message, Catch::Contains(c.expected));
  }
  auto three = reranker::try_create(rerank_settings{}, bytes());
  REQUIRE_FALSE(three.has_value());
  CHECK_THAT(three.error().message, Catch::Contains("\"yes\" is 3 tokens"));
}

TEST_CASE("yes and no are single tokens of the llama2.c 32k tokenizer", "[core][rerank]") {
  const auto path = test::shared_file("models/llama2c-tokenizer-32k/tokenizer.bin");
  if (path.empty()) return;
  auto tok = llama2c_tokenizer::load(path);
  REQUIRE(tok.has_value());
  std::shared_ptr<const tokenizer> shared = std::move(*tok);
  const auto r = reranker::try_create(rerank_settings{}, shared);
  INFO((r ? "" : r.error().message));
  REQUIRE(r.has_value());
  CHECK(shared->piece(r->yes_id()).find("yes") != std::string::npos);
  CHECK(shared->piece(r->no_id()).find("no") != std::string::npos);
}

TEST_CASE("the score is P(yes) among yes and no", "[core][rerank]") {
  CHECK(reranker::score(0.0, 0.0) == 0.5);
  CHECK(reranker::score(2.0, 1.0) == Approx(1.0 / (1.0 + std::exp(-1.0))));
  CHECK(reranker::score(1.0, 2.0) == Approx(1.0 - 1.0 / (1.0 + std::exp(-1.0))));
  // softmax over the two logits, computed directly
  const double y = 3.25, n = -1.5;
  CHECK(reranker::score(y, n) == Approx(std::exp(y) / (std::exp(y) + std::exp(n))));
  // far apart: finite and at the ends, never NaN
  CHECK(reranker::score(1e6, -1e6) == 1.0);
  CHECK(reranker::score(-1e6, 1e6) == 0.0);
}

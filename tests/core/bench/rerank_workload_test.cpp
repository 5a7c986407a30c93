// The rerank workload: text of a given token length in the served tokenizer, and the
// sizes of ../shared/workloads/README.md.
#include <catch2/catch.hpp>

#include "core/api/reranker.hpp"
#include "core/bench/rerank_workload.hpp"
#include "core/model/tokenizer/byte_tokenizer.hpp"
#include "core/model/tokenizer/llama2c_tokenizer.hpp"
#include "tests/shared_data.hpp"

using namespace inflight;

TEST_CASE("rerank workload: sizes and token lengths with the byte tokenizer", "[core][bench][rerank]") {
  byte_tokenizer tok;
  std::mt19937_64 rng(1);
  auto small = bench::rerank_workload(bench::workload_size::small, 0, tok, rng);
  REQUIRE(small.has_value());
  REQUIRE(small->size() == 5);
  for (const auto& c : *small) {
    CHECK(tok.encode(c.query, false).size() == 16);
    REQUIRE(c.documents.size() == 100);
    for (const auto& d : c.documents) CHECK(tok.encode(d, false).size() == 64);
  }
  CHECK((*small)[0].documents[0] != (*small)[0].documents[1]);
  CHECK(bench::whole_character_tokens(tok).size() == 95);  // printable ASCII, from space to tilde
  const auto full = bench::rerank_shape_of(bench::workload_size::full);
  CHECK(full.num_requests == 20);
  CHECK(full.query_tokens == 32);
  CHECK(full.num_documents == 100);
  CHECK(full.document_tokens == 256);
  auto two = bench::rerank_workload(bench::workload_size::full, 2, tok, rng);
  REQUIRE(two.has_value());
  CHECK(two->size() == 2);
  CHECK_FALSE(bench::rerank_workload(bench::workload_size::small, -1, tok, rng).has_value());
}

TEST_CASE("rerank workload: texts of the llama2.c 32k tokenizer have the asked length", "[core][bench][rerank]") {
  const auto path = test::shared_file("models/llama2c-tokenizer-32k/tokenizer.bin");
  if (path.empty()) return;
  auto tok = llama2c_tokenizer::load(path);
  REQUIRE(tok.has_value());
  std::mt19937_64 rng(2);
  const auto ids = bench::whole_character_tokens(**tok);
  CHECK(ids.size() > 30000);  // the byte-fallback tokens of non-ASCII bytes are left out
  int num_exact = 0;
  for (const int n : {16, 32, 64, 256}) {
    for (int i = 0; i < 10; ++i) {
      const auto text = bench::text_of_tokens(**tok, ids, n, rng);
      const int got = int((*tok)->encode(text, false).size());
      CHECK(std::abs(got - n) <= 2);
      num_exact += got == n;
    }
  }
  CHECK(num_exact >= 30);  // almost always exact
}

TEST_CASE("rerank workload: the built-in template's token counts in the bench models' tokenizer",
          "[core][bench][rerank]") {
  // What simulate's rerank prompts add to a query and a document, measured here from the
  // real reranker's prompts, so the default cannot drift from the template: what every
  // call's prompts share (the head), what a call's documents share after the query, and
  // what is left after the document.
  const auto path = test::shared_file("models/llama2c-tokenizer-32k/tokenizer.bin");
  if (path.empty()) return;
  auto tok = llama2c_tokenizer::load(path);
  REQUIRE(tok.has_value());
  std::shared_ptr<const tokenizer> shared = std::move(*tok);
  auto rerank = reranker::try_create(rerank_settings{}, shared);
  REQUIRE(rerank.has_value());
  const auto common = [](const std::vector<token_id>& a, const std::vector<token_id>& b) {
    std::size_t k = 0;
    while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
    return double(k);
  };
  std::mt19937_64 rng(3);
  for (const auto size : {bench::workload_size::small, bench::workload_size::full}) {
    auto cases = bench::rerank_workload(size, 4, *shared, rng);
    REQUIRE(cases.has_value());
    const auto shape = bench::rerank_shape_of(size);
    double head = 0.0, document_head = 0.0, tail = 0.0;
    int num_heads = 0, num_documents = 0;
    std::vector<token_id> first_prompt;
    for (const auto& c : *cases) {
      const auto prefix = rerank->encode_prefix(c.query);
      const auto next = rerank->encode(prefix, c.query, c.documents[9]).tokens;
      for (std::size_t d = 0; d < 8; ++d, ++num_documents) {
        const auto prompt = rerank->encode(prefix, c.query, c.documents[d]).tokens;
        const double shared_in_call = common(prompt, next);
        document_head += shared_in_call - double(prefix.size());
        tail += double(prompt.size()) - shared_in_call - shape.document_tokens;
      }
      const auto prompt = rerank->encode(prefix, c.query, c.documents[0]).tokens;
      if (first_prompt.empty()) {
        first_prompt = prompt;
        continue;
      }
      head += common(prompt, first_prompt);
      ++num_heads;
      CHECK(double(prefix.size()) - common(prompt, first_prompt) == Approx(shape.query_tokens).margin(1.0));
    }
    head /= num_heads;
    document_head /= num_documents;
    tail /= num_documents;
    INFO("head " << head << ", document head " << document_head << ", tail " << tail);
    const auto t = bench::default_rerank_template_tokens;
    CHECK(std::abs(head - t.before_query) <= 1.0);
    CHECK(std::abs(document_head - t.before_document) <= 0.5);
    CHECK(std::abs(tail - t.after_document) <= 1.0);
  }
}

TEST_CASE("rerank workload: token-id prompts share the template's head, and each call's prefix",
          "[core][bench][rerank]") {
  std::mt19937_64 rng(4);
  auto prompts = bench::rerank_prompts(bench::workload_size::small, 3, {10, 4, 5}, 1000, rng);
  REQUIRE(prompts.has_value());
  REQUIRE(prompts->size() == 300);
  const auto shape = bench::rerank_shape_of(bench::workload_size::small);
  const int in_call = 10 + shape.query_tokens + 4;
  const auto& first = (*prompts)[0].prompt_ids;
  for (std::size_t i = 0; i < prompts->size(); ++i) {
    const auto& p = (*prompts)[i];
    CHECK(p.is_score);
    CHECK(p.group == int(i / 100));
    REQUIRE(p.prompt_ids.size() == std::size_t(in_call + shape.document_tokens + 5));
    CHECK(p.arrival_s == 0.0);
    // Every prompt: the same head and tail; its call's query and document line's head.
    CHECK(std::equal(p.prompt_ids.begin(), p.prompt_ids.begin() + 10, first.begin()));
    CHECK(std::equal(p.prompt_ids.end() - 5, p.prompt_ids.end(), first.end() - 5));
    const auto& call_first = (*prompts)[i / 100 * 100].prompt_ids;
    CHECK(std::equal(p.prompt_ids.begin(), p.prompt_ids.begin() + in_call, call_first.begin()));
    for (token_id t : p.prompt_ids) CHECK((t >= 3 && t < 1000));
  }
  // Calls differ in their query; documents differ after their call's prefix.
  CHECK(!std::equal(first.begin() + 10, first.begin() + in_call, (*prompts)[100].prompt_ids.begin() + 10));
  CHECK(!std::equal(first.begin() + in_call, first.begin() + in_call + shape.document_tokens,
                    (*prompts)[1].prompt_ids.begin() + in_call));
  CHECK_FALSE(bench::rerank_prompts(bench::workload_size::small, -1, {10, 4, 5}, 1000, rng).has_value());
  CHECK_FALSE(bench::rerank_prompts(bench::workload_size::small, 1, {-1, 4, 5}, 1000, rng).has_value());
}

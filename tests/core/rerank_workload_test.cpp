// The rerank workload: text of a given token length in the served tokenizer, and the
// sizes of ../shared/workloads/README.md.
#include <catch2/catch.hpp>

#include "core/bench/rerank_workload.hpp"
#include "core/tokenizer/byte_tokenizer.hpp"
#include "core/tokenizer/llama2c_tokenizer.hpp"
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

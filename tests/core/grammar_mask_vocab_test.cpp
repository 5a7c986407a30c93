// The grammar mask over a real vocabulary (the 32k llama2.c / Llama 2 tokenizer): on
// random walks through a JSON Schema it agrees with the brute-force mask, and the time of
// each fill is printed (a figure for docs/structured-outputs.md, never asserted).
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/grammar/grammar_cache.hpp"
#include "core/grammar/matcher.hpp"
#include "core/grammar/tokenizer_vocab.hpp"
#include "core/model/tokenizer/llama2c_tokenizer.hpp"
#include "tests/shared_data.hpp"

using namespace inflight;

namespace {

const char* const schema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 20},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "email": {"type": "string", "format": "email"},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 10}, "maxItems": 3},
    "kind": {"enum": ["cat", "dog", "bird"]},
    "score": {"type": "number"}
  },
  "required": ["name", "age", "kind"]
})";

std::vector<std::uint64_t> brute_force_mask(const grammar_matcher& m) {
  const auto& v = m.index().vocab();
  std::vector<std::uint64_t> mask(v.num_mask_words(), 0);
  grammar_matcher copy = m;
  for (token_id id = 0; id < v.size(); ++id) {
    if (!copy.try_accept_token(id)) continue;
    mask[static_cast<std::size_t>(id) >> 6] |= std::uint64_t{1} << (id & 63);
    REQUIRE(copy.try_rollback(1));
  }
  return mask;
}

std::vector<token_id> allowed_ids(const std::vector<std::uint64_t>& mask) {
  std::vector<token_id> out;
  for (std::size_t w = 0; w < mask.size(); ++w)
    for (std::uint64_t bits = mask[w]; bits != 0; bits &= bits - 1)
      out.push_back(static_cast<token_id>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits))));
  return out;
}

}  // namespace

TEST_CASE("grammar mask over the 32k llama2.c vocabulary agrees with brute force, and its time is printed",
          "[core][grammar]") {
  const auto path = test::shared_file("models/llama2c-tokenizer-32k/tokenizer.bin");
  if (path.empty()) return;
  auto tok = llama2c_tokenizer::load(path);
  REQUIRE(tok.has_value());
  const auto vocab = make_grammar_vocab(**tok);
  REQUIRE(vocab->size() == 32000);
  grammar_cache cache(vocab);
  using clock = std::chrono::steady_clock;
  const auto compile_start = clock::now();
  auto index = cache.try_get({grammar_kind::json_schema, schema});
  REQUIRE(index.has_value());
  const double compile_s = std::chrono::duration<double>(clock::now() - compile_start).count();
  const auto warm_start = clock::now();
  (*index)->warm_up();
  const double warm_up_s = std::chrono::duration<double>(clock::now() - warm_start).count();

  // Eight random walks; masks compared with brute force every 25 steps.
  std::vector<std::uint64_t> mask(vocab->num_mask_words());
  int num_compared = 0;
  const auto walk = [&](const std::shared_ptr<const token_index>& idx, std::vector<double>& seconds) {
    int num_completed = 0;
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
      std::mt19937_64 rng(seed);
      grammar_matcher m(idx);
      for (int step = 0; step < 200 && !m.is_complete(); ++step) {
        const auto start = clock::now();
        m.fill_next_token_mask(mask);
        seconds.push_back(std::chrono::duration<double>(clock::now() - start).count());
        if (step % 25 == 0) {
          INFO("walk " << seed << ", step " << step);
          CHECK(mask == brute_force_mask(m));
          ++num_compared;
        }
        auto ids = allowed_ids(mask);
        REQUIRE(!ids.empty());
        // Short tokens a little more often, so walks leave long strings and reach the end.
        token_id pick = ids[rng() % ids.size()];
        for (int tries = 0; tries < 3 && vocab->bytes(pick).size() > 2; ++tries) pick = ids[rng() % ids.size()];
        REQUIRE(m.try_accept_token(pick));
      }
      num_completed += m.is_complete() ? 1 : 0;
    }
    return num_completed;
  };
  const auto summary = [](std::vector<double> seconds) {
    std::sort(seconds.begin(), seconds.end());
    double sum = 0.0;
    for (double s : seconds) sum += s;
    const double p99 = seconds[std::min(seconds.size() - 1, seconds.size() * 99 / 100)];
    char line[160];
    std::snprintf(line, sizeof line, "%zu masks: mean %.4f ms, p99 %.4f ms, max %.4f ms", seconds.size(),
                  sum / double(seconds.size()) * 1e3, p99 * 1e3, seconds.back() * 1e3);
    return std::string(line);
  };
  std::vector<double> warm, cold;
  const int num_completed = walk(*index, warm);
  // The same walks over an index that computes each position's lists on first use.
  auto fresh = try_compile({grammar_kind::json_schema, schema});
  REQUIRE(fresh.has_value());
  walk(std::make_shared<const token_index>(std::make_shared<const grammar>(std::move(*fresh)), vocab), cold);
  CHECK(num_compared >= 16);
  std::printf("grammar mask, 32k llama2.c vocab, 6-property schema: compile %.2f ms, index warm-up %.1f ms; "
              "%d of 8 walks complete\n  warmed index: %s\n  lazy index:   %s\n",
              compile_s * 1e3, warm_up_s * 1e3, num_completed, summary(warm).c_str(), summary(cold).c_str());
}

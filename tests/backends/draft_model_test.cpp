// The `draft` drafter (backends/draft_model): a model's greedy continuation from its own
// KV pool, caught up from the common prefix after a refuted draft, its blocks given back
// when a sequence ends or when a more recent one needs them. stories260K drafting for
// itself: its proposals are the target's greedy tokens.

#include "backends/draft_model.hpp"

#include <catch2/catch.hpp>

#include "tests/backends/stories260k.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

/// The target's greedy continuation of `prompt`, `n` tokens, one decode step each.
std::vector<token_id> greedy(const std::shared_ptr<const model_weights>& w, std::vector<token_id> prompt, int n) {
  auto be = cpu_backend::create(w, {16, 64, 0}, {1});
  REQUIRE(be.has_value());
  std::vector<token_id> out;
  step_plan plan;
  plan.seqs.resize(1);
  auto& s = plan.seqs[0];
  s.do_sample = true;
  s.params.temperature = 0.0f;
  for (int b = 0; b < 64; ++b) s.block_table.push_back(b);
  s.tokens = std::move(prompt);
  for (int i = 0; i < n; ++i) {
    plan.step_id = std::uint64_t(i + 1);
    auto r = (*be)->execute(plan);
    REQUIRE(r.has_value());
    out.push_back(r->tokens[0].token);
    s.start_position += int(s.tokens.size());
    s.tokens = {out.back()};
  }
  return out;
}

}  // namespace

TEST_CASE("draft model: proposes the model's greedy tokens and catches up after a refuted draft",
          "[backends][spec]") {
  auto m = load_stories260k();
  if (!m) return;
  draft_model_options o;
  o.num_threads = 1;
  o.vocab_size = m->weights->config.vocab_size;
  auto d = draft_model_drafter::create(m->weights, o);
  REQUIRE(d.has_value());
  const auto prompt = m->tok->encode("Once upon a time, there was a little dog", true);
  const auto expected = greedy(m->weights, prompt, 12);

  auto tokens = prompt;
  const auto first = (*d)->propose(7, tokens, 4);
  CHECK(first == std::vector<token_id>(expected.begin(), expected.begin() + 4));
  // Two kept and a different third token (a refuted draft): the cache steps back to
  // the common prefix and the next draft follows the new text.
  tokens.insert(tokens.end(), expected.begin(), expected.begin() + 2);
  tokens.push_back(expected[2] == 5 ? 6 : 5);
  const auto after = (*d)->propose(7, tokens, 3);
  auto wanted = greedy(m->weights, tokens, 3);
  CHECK(after == wanted);
  // The cache is not fed again from the start: the prompt went through once.
  CHECK((*d)->num_tokens_fed() < 2 * tokens.size());

  // Another sequence beside it, then both end: every block is free again.
  const int free_before = (*d)->num_free_blocks();
  CHECK((*d)->propose(8, prompt, 2) == std::vector<token_id>(expected.begin(), expected.begin() + 2));
  CHECK((*d)->num_free_blocks() < free_before);
  (*d)->forget(7);
  (*d)->forget(8);
  auto fresh = draft_model_drafter::create(m->weights, o);
  CHECK((*d)->num_free_blocks() == (*fresh)->num_free_blocks());
}

TEST_CASE("draft model: a full pool evicts the sequence used least recently, and a wrong vocabulary is refused",
          "[backends][spec]") {
  auto m = load_stories260k();
  if (!m) return;
  draft_model_options o;
  o.num_threads = 1;
  o.block_size = 16;
  const auto& c = m->weights->config;
  // Two blocks of K and V for every layer: one 20-token sequence fills it.
  o.kv_memory_bytes = std::int64_t(2) * 16 * 2 * c.num_layers * c.num_kv_heads * (c.dim / c.num_heads) * 4;
  auto d = draft_model_drafter::create(m->weights, o);
  REQUIRE(d.has_value());
  REQUIRE((*d)->num_free_blocks() == 2);
  const auto prompt = m->tok->encode("Once upon a time, there was a little dog named", true);
  REQUIRE(prompt.size() > 8);
  const auto a = (*d)->propose(1, prompt, 4);
  CHECK(a.size() == 4);
  const auto b = (*d)->propose(2, prompt, 4);  // takes sequence 1's blocks
  CHECK(b == a);
  CHECK((*d)->propose(1, prompt, 4) == a);     // caught up again from the start

  o.vocab_size = c.vocab_size + 1;
  auto refused = draft_model_drafter::create(m->weights, o);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().message.find("vocabulary") != std::string::npos);
}

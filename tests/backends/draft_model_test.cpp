// The `draft` drafter's model (backends/draft_model): the draft plans the scheduler makes,
// run on the CPU backend: several sequences' greedy drafts in one ragged step, each from
// the K/V its table holds (blocks of the KV owner's draft space). stories260K drafting
// for itself: its drafts are the target's greedy tokens.

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

TEST_CASE("draft model: drafts the model's greedy tokens for several sequences in one ragged step, from its cache",
          "[backends][spec]") {
  auto m = load_stories260k();
  if (!m) return;
  draft_model_options o;
  o.num_threads = 1;
  o.vocab_size = m->weights->config.vocab_size;
  auto d = draft_model::create(m->weights, o);
  REQUIRE(d.has_value());
  REQUIRE((*d)->num_kv_blocks() >= 8);
  const auto a = m->tok->encode("Once upon a time, there was a little dog", true);
  const auto b = m->tok->encode("Lily went to the park", true);
  const auto a_expected = greedy(m->weights, a, 8);
  const auto b_expected = greedy(m->weights, b, 2);

  // Two sequences at once, blocks of the draft space chosen by the caller (the KV owner).
  draft_plan plan;
  plan.seqs.push_back({1, a, 0, {0, 1, 2, 3}, 4});
  plan.seqs.push_back({2, b, 0, {4, 5, 6, 7}, 2});
  auto first = (*d)->run(plan);
  REQUIRE(first.has_value());
  REQUIRE(first->tokens.size() == 2);
  CHECK(first->tokens[0] == std::vector<token_id>(a_expected.begin(), a_expected.begin() + 4));
  CHECK(first->tokens[1] == b_expected);
  CHECK((*d)->num_steps() == 4);  // batched: the longest draft's steps, not 4 + 2
  CHECK((*d)->num_tokens_fed() == a.size() + 3 + b.size() + 1);  // the last drafted token is never fed

  // Sequence 1 kept two drafted tokens and went on with another: its cache holds the
  // prompt and those two (fed while drafting), so it is fed the new token alone.
  auto tokens = a;
  tokens.insert(tokens.end(), a_expected.begin(), a_expected.begin() + 2);
  tokens.push_back(a_expected[2] == 5 ? 6 : 5);
  const int cached = int(a.size()) + 2;
  draft_plan next;
  next.seqs.push_back({1, {tokens.begin() + cached, tokens.end()}, cached, {0, 1, 2, 3}, 3});
  const auto fed_before = (*d)->num_tokens_fed();
  auto second = (*d)->run(next);
  REQUIRE(second.has_value());
  CHECK(second->tokens[0] == greedy(m->weights, tokens, 3));
  CHECK((*d)->num_tokens_fed() - fed_before == 1 + 2);

  // A block table too short for the positions is the whole plan's error.
  draft_plan short_table;
  short_table.seqs.push_back({3, a, 0, {}, 4});
  auto refused = (*d)->run(short_table);
  CHECK_FALSE(refused.has_value());
}

TEST_CASE("draft model: a wrong vocabulary or a pool without a block is refused", "[backends][spec]") {
  auto m = load_stories260k();
  if (!m) return;
  draft_model_options o;
  o.num_threads = 1;
  o.vocab_size = m->weights->config.vocab_size + 1;
  auto refused = draft_model::create(m->weights, o);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().message.find("vocabulary") != std::string::npos);
  o.vocab_size = 0;
  o.kv_memory_bytes = 64;
  auto empty = draft_model::create(m->weights, o);
  REQUIRE_FALSE(empty.has_value());
  CHECK(empty.error().message.find("no block") != std::string::npos);
}

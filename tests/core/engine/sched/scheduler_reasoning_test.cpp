// A thinking model's reasoning phase in the scheduler (sampling_params::reasoning): the
// grammar constrains only the answer after the end of the reasoning, the first token may
// open the reasoning, and a spent thinking budget leaves only the end token to sample.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/engine/sampling/sampler.hpp"
#include "core/grammar/grammar_cache.hpp"
#include "tests/core/engine/sched/sched_harness.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

constexpr token_id eos = 0, a = 1, b = 2, x = 3, think = 4, end_think = 5, y = 6, z = 7;

std::shared_ptr<const grammar_vocab> vocab() {
  std::vector<std::string> bytes = {"", "a", "b", "x", "<think>", "</think>", "y", "z"};
  return std::make_shared<const grammar_vocab>(std::move(bytes), std::vector<token_id>{eos});
}

std::shared_ptr<const token_index> grammar_of(const std::string& pattern) {
  auto g = try_compile({grammar_kind::regex, pattern});
  if (!g) FAIL("compile failed: " << g.error().message);
  return std::make_shared<const token_index>(std::make_shared<const grammar>(std::move(*g)), vocab());
}

bool allows(const std::vector<std::uint64_t>& mask, token_id id) {
  const auto word = static_cast<std::size_t>(id) / 64;
  return word < mask.size() && ((mask[word] >> (id % 64)) & 1);
}

/// What one request did: its tokens, its finish, and the mask of each sampling step.
struct outcome {
  std::vector<token_id> tokens;
  finish_reason reason = finish_reason::stop;
  std::vector<std::vector<std::uint64_t>> masks;
};

/// Plays `script` (tokens by sample index) when given, else samples random logits through
/// core's pipeline, mask included.
outcome run_one(seq_request req, const std::vector<token_id>& script) {
  auto s = make_scheduler(make_config(64, 4, 0), 64, 4, load_policy("fcfs"));
  fake_backend backend(64, 4, 1 << 30);
  REQUIRE(s.submit(req).has_value());
  outcome out;
  for (int step = 0; s.has_work() && step < 200; ++step) {
    auto plan = s.schedule();
    REQUIRE(plan.has_value());
    if (plan->seqs.empty()) continue;
    auto res = backend.execute(*plan);
    REQUIRE(res.has_value());
    std::size_t k = 0;
    for (const auto& st : plan->seqs) {
      if (!st.do_sample) continue;
      out.masks.push_back(st.allowed_tokens);
      if (!script.empty()) {
        res->tokens[k].token = script.at(static_cast<std::size_t>(st.sample_index));
      } else {
        std::mt19937 gen(static_cast<std::uint32_t>(st.sample_index * 7919 + 1));
        std::normal_distribution<float> dist(0.0f, 2.0f);
        std::vector<float> row(8);
        for (float& v : row) v = dist(gen);
        row[end_think] = -50.0f;  // the model would think forever
        row[eos] = -50.0f;
        res->tokens[k] = sample(row, st);
        res->tokens[k].id = st.id;
      }
      ++k;
    }
    auto events = s.apply(*res);
    REQUIRE(events.has_value());
    for (const auto& e : *events) {
      if (e.type == seq_event::kind::token) {
        out.tokens.push_back(e.token.token);
      } else {
        out.reason = e.reason;
      }
    }
  }
  REQUIRE_FALSE(s.has_work());
  return out;
}

seq_request request(std::shared_ptr<const token_index> grammar, std::optional<reasoning_phase> phase,
                    int max_tokens = 20) {
  seq_request req;
  req.id = 1;
  req.prompt = {1, 2, 3};
  req.params.temperature = 1.0f;
  req.params.max_tokens = max_tokens;
  req.params.grammar = std::move(grammar);
  req.params.reasoning = phase;
  req.seed = 7;
  return req;
}

const reasoning_phase phase{think, end_think};

}  // namespace

TEST_CASE("reasoning phase: the grammar constrains the answer, not the reasoning", "[core][sched][reasoning]") {
  const std::vector<token_id> script = {think, y, z, y, end_think, a, b, x};
  const auto r = run_one(request(grammar_of("(ab)+x"), phase), script);
  CHECK(r.tokens == script);
  CHECK(r.reason == finish_reason::stop);  // the grammar completed after the reasoning
  REQUIRE(r.masks.size() == script.size());
  // The first token: the grammar's start or the opening of the reasoning, nothing else.
  CHECK(allows(r.masks[0], think));
  CHECK(allows(r.masks[0], a));
  CHECK_FALSE(allows(r.masks[0], y));
  CHECK_FALSE(allows(r.masks[0], end_think));
  for (std::size_t i = 1; i <= 4; ++i) CHECK(r.masks[i].empty());  // reasoning: free text
  CHECK(allows(r.masks[5], a));                                      // the answer: the grammar's
  CHECK_FALSE(allows(r.masks[5], y));
  CHECK_FALSE(allows(r.masks[5], think));

  // Without the phase the same output breaks the grammar at its first token.
  const auto plain = run_one(request(grammar_of("(ab)+x"), std::nullopt), script);
  CHECK(plain.reason == finish_reason::error);
}

TEST_CASE("reasoning phase: an answer without reasoning is the grammar's from its first token",
          "[core][sched][reasoning]") {
  const auto ok = run_one(request(grammar_of("(ab)+x"), phase), {a, b, x});
  CHECK(ok.tokens == std::vector<token_id>{a, b, x});
  CHECK(ok.reason == finish_reason::stop);
  CHECK_FALSE(allows(ok.masks[1], think));  // opening the reasoning later is not allowed
  // A prompt that opened the reasoning: free text first, even where the grammar would refuse it.
  reasoning_phase open = phase;
  open.is_open = true;
  const auto opened = run_one(request(grammar_of("(ab)+x"), open), {y, end_think, a, b, x});
  CHECK(opened.reason == finish_reason::stop);
  CHECK(opened.masks[0].empty());
}

TEST_CASE("reasoning phase: a spent thinking budget forces the end of the reasoning", "[core][sched][reasoning]") {
  reasoning_phase limited = phase;
  limited.is_open = true;
  limited.budget = 3;
  const auto r = run_one(request(nullptr, limited, 8), {});
  REQUIRE(r.tokens.size() == 8);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(r.tokens[i] != end_think);
    CHECK(r.masks[i].empty());
  }
  CHECK(r.tokens[3] == end_think);  // the model's logits made it the least likely token
  CHECK(allows(r.masks[3], end_think));
  for (token_id t : {eos, a, b, x, think, y, z}) CHECK_FALSE(allows(r.masks[3], t));
  for (std::size_t i = 4; i < r.masks.size(); ++i) CHECK(r.masks[i].empty());  // the answer is free

  // Without a budget the same model never ends its reasoning.
  reasoning_phase unlimited = phase;
  unlimited.is_open = true;
  const auto free = run_one(request(nullptr, unlimited, 8), {});
  for (token_id t : free.tokens) CHECK(t != end_think);

  // A budget of 0 closes a reasoning the model opens at once.
  reasoning_phase none = phase;
  none.budget = 0;
  const auto closed = run_one(request(nullptr, none, 4), {think, end_think, a, b});
  CHECK(closed.tokens == std::vector<token_id>{think, end_think, a, b});
  CHECK(allows(closed.masks[1], end_think));
  CHECK_FALSE(allows(closed.masks[1], a));
}

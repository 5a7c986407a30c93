// Prefill-only embedding sequences in the scheduler: chunked like any prompt under the
// budget, each chunk asks for the hidden output its pooling needs (last: the last
// chunk's last token; first: the first chunk's first token; mean: every chunk's sum),
// the sequence finishes with the pooled state when its prompt is computed, and its
// blocks go back at once. Mean and first pooling never use the prefix cache.
#include "tests/core/engine/sched/sched_harness.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

seq_request embedding(seq_id id, std::vector<token_id> prompt, pooling_kind pooling) {
  seq_request r;
  r.id = id;
  r.prompt = std::move(prompt);
  r.params.max_tokens = 1;
  r.pooling = pooling;
  return r;
}

std::vector<token_id> tokens_of(int length, int salt) {
  std::vector<token_id> p;
  for (int i = 0; i < length; ++i) p.push_back(token_id(1 + (i * 7 + salt) % 40));
  return p;
}

/// A fake hidden state of position p holding token t: {p + 1, t}.
std::vector<float> state_at(int position, token_id token) { return {float(position + 1), float(token)}; }

/// The backend's answer: a token per sampled step, the hidden output each step asks for.
step_result answer(const step_plan& plan) {
  step_result out;
  out.step_id = plan.step_id;
  for (const auto& s : plan.seqs) {
    if (s.do_sample) out.tokens.push_back({s.id, 3, 0.0f, {}});
    const int n = int(s.tokens.size());
    switch (s.hidden) {
      case hidden_output::none: break;
      case hidden_output::first: out.hidden.push_back({s.id, state_at(s.start_position, s.tokens.front())}); break;
      case hidden_output::last: out.hidden.push_back({s.id, state_at(s.start_position + n - 1, s.tokens.back())}); break;
      case hidden_output::sum: {
        std::vector<float> sum(2, 0.0f);
        for (int i = 0; i < n; ++i) {
          const auto st = state_at(s.start_position + i, s.tokens[std::size_t(i)]);
          sum[0] += st[0];
          sum[1] += st[1];
        }
        out.hidden.push_back({s.id, sum});
        break;
      }
    }
  }
  return out;
}

std::vector<float> expected(const std::vector<token_id>& prompt, pooling_kind pooling) {
  const int n = int(prompt.size());
  if (pooling == pooling_kind::first) return state_at(0, prompt.front());
  if (pooling == pooling_kind::last) return state_at(n - 1, prompt.back());
  float tokens = 0;
  for (const auto t : prompt) tokens += float(t);
  return {float(n + 1) / 2.0f, tokens / float(n)};
}

}  // namespace

TEST_CASE("embedding: chunked under the budget, pooled over its chunks, blocks released at once",
          "[core][sched][embeddings]") {
  for (const auto pooling : {pooling_kind::last, pooling_kind::first, pooling_kind::mean}) {
    INFO("pooling " << to_string(pooling));
    auto s = make_scheduler(make_config(16, 8), 32, 4, load_policy("splitfuse"));
    const auto prompt = tokens_of(40, 1);
    REQUIRE(s.submit(embedding(1, prompt, pooling)).has_value());
    seq_request gen;
    gen.id = 2;
    gen.prompt = {1, 2, 3};
    gen.params.max_tokens = 4;
    REQUIRE(s.submit(gen).has_value());
    int num_tokens_seen = 0, num_hidden_steps = 0, num_chunks = 0;
    std::vector<seq_event> finished;
    for (int step = 0; step < 50 && s.has_work(); ++step) {
      auto plan = s.schedule();
      REQUIRE(plan.has_value());
      check_step_invariants(s, *plan);
      for (const auto& st : plan->seqs) {
        if (st.id != 1) {
          CHECK(st.hidden == hidden_output::none);  // a generation never asks for states
          continue;
        }
        CHECK_FALSE(st.do_sample);
        CHECK(st.logit_rows.empty());
        const bool is_last = st.start_position + int(st.tokens.size()) == 40;
        const auto want = pooling == pooling_kind::mean                  ? hidden_output::sum
                          : pooling == pooling_kind::first               ? (st.start_position == 0 ? hidden_output::first
                                                                                                   : hidden_output::none)
                          : is_last                                      ? hidden_output::last
                                                                         : hidden_output::none;
        CHECK(st.hidden == want);
        num_tokens_seen += int(st.tokens.size());
        ++num_chunks;
        num_hidden_steps += st.hidden != hidden_output::none;
      }
      auto events = s.apply(answer(*plan));
      REQUIRE(events.has_value());
      for (auto& ev : *events) {
        if (ev.id != 1) continue;
        REQUIRE(ev.type == seq_event::kind::finished);  // no token event, ever
        finished.push_back(ev);
        CHECK(s.sched().has_pending_releases());
      }
    }
    REQUIRE(s.schedule().has_value());  // no work left: only the releases
    CHECK(num_tokens_seen == 40);
    CHECK(num_chunks >= 3);  // 40 tokens, at most 16 a step
    CHECK(num_hidden_steps == (pooling == pooling_kind::mean ? num_chunks : 1));
    REQUIRE(finished.size() == 1);
    CHECK(finished[0].reason == finish_reason::stop);
    CHECK(finished[0].num_generated_tokens == 0);
    CHECK(finished[0].row_logits.empty());
    const auto want = expected(prompt, pooling);
    REQUIRE(finished[0].embedding.size() == 2);
    CHECK(finished[0].embedding[0] == Approx(want[0]));
    CHECK(finished[0].embedding[1] == Approx(want[1]));
    CHECK_FALSE(s.has_work());
    CHECK(s.num_free_blocks() == 32);
  }
}

TEST_CASE("embedding: last pooling shares cached prefixes, mean and first compute every token",
          "[core][sched][embeddings][prefix]") {
  std::vector<token_id> prefix;
  for (int i = 0; i < 18; ++i) prefix.push_back(token_id(1 + i % 15));
  for (const auto pooling : {pooling_kind::last, pooling_kind::first, pooling_kind::mean}) {
    INFO("pooling " << to_string(pooling));
    auto config = make_config(32, 4);
    config.enable_prefix_caching = true;
    auto s = make_scheduler(config, 64, 4, load_policy("splitfuse"));
    std::map<seq_id, seq_event> finished;
    std::map<seq_id, std::vector<token_id>> prompts;
    for (seq_id id = 1; id <= 4; ++id) {
      auto prompt = prefix;
      for (int i = 0; i < 9; ++i) prompt.push_back(token_id(20 + (int(id) * 7 + i) % 11));
      prompts[id] = prompt;
      REQUIRE(s.submit(embedding(id, prompt, pooling)).has_value());
      // One at a time: each finds the blocks of those before it, if it may.
      for (int step = 0; step < 50 && s.has_work(); ++step) {
        auto plan = s.schedule();
        REQUIRE(plan.has_value());
        if (!s.last_request().new_hashes.empty()) CHECK(can_share_prefix(pooling));
        auto events = s.apply(answer(*plan));
        REQUIRE(events.has_value());
        for (auto& ev : *events) finished.emplace(ev.id, ev);
      }
    }
    REQUIRE(finished.size() == 4);
    for (seq_id id = 1; id <= 4; ++id) {
      INFO("input " << id);
      CHECK(finished.at(id).num_cached_tokens == (id > 1 && can_share_prefix(pooling) ? 16 : 0));
      const auto want = expected(prompts.at(id), pooling);
      REQUIRE(finished.at(id).embedding.size() == 2);
      CHECK(finished.at(id).embedding[0] == Approx(want[0]));
      CHECK(finished.at(id).embedding[1] == Approx(want[1]));
    }
    REQUIRE(s.schedule().has_value());
    CHECK(s.num_free_blocks() == 64);
  }
}

TEST_CASE("embedding: a result without the hidden state is refused", "[core][sched][embeddings]") {
  auto s = make_scheduler(make_config(64, 8), 32, 4, load_policy("fcfs"));
  REQUIRE(s.submit(embedding(1, tokens_of(10, 2), pooling_kind::last)).has_value());
  auto plan = s.schedule();
  REQUIRE(plan.has_value());
  REQUIRE(plan->seqs.size() == 1);
  step_result missing;
  missing.step_id = plan->step_id;
  auto refused = s.apply(missing);
  REQUIRE_FALSE(refused.has_value());
  CHECK_THAT(refused.error().message, Catch::Contains("hidden state"));
  auto events = s.apply(answer(*plan));
  REQUIRE(events.has_value());
  REQUIRE(events->size() == 1);
  CHECK(events->front().embedding.size() == 2);
}

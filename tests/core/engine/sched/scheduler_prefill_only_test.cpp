// Prefill-only (scoring) sequences in the scheduler: chunked like any prompt under the
// budget, the last chunk asks for the score rows instead of a sample, the result
// finishes the sequence at once with those rows and its blocks go back with the next
// kv request.
#include "tests/core/engine/sched/sched_harness.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

seq_request scoring(seq_id id, int length, std::vector<token_id> rows = {7, 9}) {
  seq_request r;
  r.id = id;
  for (int i = 0; i < length; ++i) r.prompt.push_back(token_id(i % 20 + 1));
  r.params.max_tokens = 1;
  r.score_rows = std::move(rows);
  return r;
}

/// The backend's answer: a sampled token per do_sample step, rows per logit_rows step.
step_result answer(const step_plan& plan) {
  step_result out;
  out.step_id = plan.step_id;
  for (const auto& s : plan.seqs) {
    if (s.do_sample) out.tokens.push_back({s.id, 3, 0.0f, {}});
    if (!s.logit_rows.empty()) {
      std::vector<float> values;
      for (const auto row : s.logit_rows) values.push_back(float(row) + 0.5f);
      out.rows.push_back({s.id, values});
    }
  }
  return out;
}

}  // namespace

TEST_CASE("prefill-only: chunked under the budget, rows on the last chunk, blocks released at once", "[core][sched][rerank]") {
  auto s = make_scheduler(make_config(16, 8), 32, 4, load_policy("splitfuse"));
  REQUIRE(s.submit(scoring(1, 40)).has_value());
  seq_request gen;
  gen.id = 2;
  gen.prompt = {1, 2, 3};
  gen.params.max_tokens = 4;
  REQUIRE(s.submit(gen).has_value());
  int num_row_steps = 0, num_tokens_seen = 0;
  std::vector<seq_event> finished;
  for (int step = 0; step < 50 && s.has_work(); ++step) {
    auto plan = s.schedule();
    REQUIRE(plan.has_value());
    check_step_invariants(s, *plan);
    for (const auto& st : plan->seqs) {
      if (st.id != 1) continue;
      num_tokens_seen += int(st.tokens.size());
      const bool is_last = st.start_position + int(st.tokens.size()) == 40;
      CHECK_FALSE(st.do_sample);  // a scoring sequence never samples
      CHECK(st.logit_rows == (is_last ? std::vector<token_id>{7, 9} : std::vector<token_id>{}));
      num_row_steps += is_last;
    }
    auto events = s.apply(answer(*plan));
    REQUIRE(events.has_value());
    for (auto& ev : *events) {
      if (ev.id != 1) continue;
      REQUIRE(ev.type == seq_event::kind::finished);  // no token event, ever
      finished.push_back(ev);
      CHECK(s.sched().has_pending_releases());  // queued in the same apply
    }
  }
  REQUIRE(s.schedule().has_value());  // no work left: the request only returns blocks
  CHECK_FALSE(s.kv().has_table(1));
  CHECK(num_tokens_seen == 40);
  CHECK(num_row_steps == 1);
  REQUIRE(finished.size() == 1);
  CHECK(finished[0].reason == finish_reason::stop);
  CHECK(finished[0].num_generated_tokens == 0);
  CHECK(finished[0].row_logits == std::vector<float>{7.5f, 9.5f});
  CHECK_FALSE(s.has_work());
  CHECK(s.num_free_blocks() == 32);
}

TEST_CASE("prefill-only: a result without the score rows is refused", "[core][sched][rerank]") {
  auto s = make_scheduler(make_config(64, 8), 32, 4, load_policy("fcfs"));
  REQUIRE(s.submit(scoring(1, 10)).has_value());
  auto plan = s.schedule();
  REQUIRE(plan.has_value());
  REQUIRE(plan->seqs.size() == 1);
  step_result missing;
  missing.step_id = plan->step_id;
  auto refused = s.apply(missing);
  REQUIRE_FALSE(refused.has_value());
  CHECK_THAT(refused.error().message, Catch::Contains("score rows"));
  // The right answer is still taken.
  auto events = s.apply(answer(*plan));
  REQUIRE(events.has_value());
  REQUIRE(events->size() == 1);
  CHECK(events->front().row_logits.size() == 2);
}

namespace {

/// One query's scoring prompts: the same `prefix`, then a document of its own.
seq_request document_of(seq_id id, const std::vector<token_id>& prefix, int document_length) {
  seq_request r = scoring(id, 0);
  r.prompt = prefix;
  for (int i = 0; i < document_length; ++i) r.prompt.push_back(token_id(20 + (int(id) * 7 + i) % 11));
  return r;
}

/// Steps until nothing is left; the finished events by sequence, and each sequence's
/// first scheduled position.
void drain(sched_rig& s, std::map<seq_id, seq_event>& finished, std::map<seq_id, int>& first_position) {
  for (int step = 0; step < 200 && s.has_work(); ++step) {
    auto plan = s.schedule();
    REQUIRE(plan.has_value());
    check_step_invariants(s, *plan);
    for (const auto& st : plan->seqs) first_position.try_emplace(st.id, st.start_position);
    auto events = s.apply(answer(*plan));
    REQUIRE(events.has_value());
    for (auto& ev : *events) finished.emplace(ev.id, ev);
  }
  REQUIRE_FALSE(s.has_work());
}

}  // namespace

TEST_CASE("prefill-only: the documents of one query share its prefix through the prefix cache",
          "[core][sched][rerank][prefix]") {
  // Prefix of 18 tokens = 4 whole blocks of 4 (16 tokens) + 2; documents of 9 tokens.
  std::vector<token_id> prefix;
  for (int i = 0; i < 18; ++i) prefix.push_back(token_id(1 + i % 15));
  for (const bool is_caching : {true, false}) {
    INFO("prefix caching " << (is_caching ? "on" : "off"));
    auto config = make_config(32, 4);
    config.enable_prefix_caching = is_caching;
    auto s = make_scheduler(config, 64, 4, load_policy("splitfuse"));
    std::map<seq_id, seq_event> finished;
    std::map<seq_id, int> first_position;
    // The first document computes the prefix; the next ones arrive after it finished.
    REQUIRE(s.submit(document_of(1, prefix, 9)).has_value());
    drain(s, finished, first_position);
    for (seq_id id = 2; id <= 6; ++id) REQUIRE(s.submit(document_of(id, prefix, 9)).has_value());
    drain(s, finished, first_position);
    REQUIRE(finished.size() == 6);
    CHECK(finished.at(1).num_cached_tokens == 0);
    CHECK(first_position.at(1) == 0);
    for (seq_id id = 2; id <= 6; ++id) {
      INFO("document " << id);
      CHECK(finished.at(id).row_logits == std::vector<float>{7.5f, 9.5f});
      // Only whole blocks of the shared prefix are reused; the documents differ after it.
      CHECK(finished.at(id).num_cached_tokens == (is_caching ? 16 : 0));
      CHECK(first_position.at(id) == (is_caching ? 16 : 0));
    }
    CHECK(s.counters().num_prefix_cache_hits == (is_caching ? 5u * 16u : 0u));
    REQUIRE(s.schedule().has_value());  // the last releases
    CHECK(s.num_free_blocks() == 64);   // cached blocks wait in the free queue
  }
}

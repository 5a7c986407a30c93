// Prefill-only (scoring) sequences in the scheduler: chunked like any prompt under the
// budget, the last chunk asks for the score rows instead of a sample, the result
// finishes the sequence at once with those rows and its blocks go back with the next
// kv request.
#include "tests/core/sched_harness.hpp"

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

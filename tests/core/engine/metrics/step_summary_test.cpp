#include <catch2/catch.hpp>

#include <random>

#include "core/engine/metrics/step_summary.hpp"
#include "core/model/lora.hpp"

using namespace inflight;

namespace {

seq_step planned(seq_id id, int num_tokens, int start, int num_prompt_tokens) {
  seq_step s;
  s.id = id;
  s.tokens.assign(std::size_t(num_tokens), 7);
  s.start_position = start;
  s.num_prompt_tokens = num_prompt_tokens;
  return s;
}

/// A step with the given sequences, each either a decode or a prompt chunk of `chunk`.
step_summary step(std::uint64_t id, std::vector<step_seq> seqs, double t) {
  step_summary s;
  s.first_step_id = s.last_step_id = id;
  s.start_s = t;
  s.end_s = t + 0.001;
  s.busy_s = 0.001;
  s.token_budget = 64;
  for (const auto& q : seqs) {
    s.num_prefill_tokens += q.num_prefill_tokens;
    s.num_decode_tokens += q.num_decode_tokens;
  }
  s.max_step_tokens = s.num_tokens();
  s.max_step_seqs = int(seqs.size());
  s.num_fused_steps = s.num_prefill_tokens > 0 && s.num_decode_tokens > 0;
  s.seqs = std::move(seqs);
  return s;
}

}  // namespace

TEST_CASE("step summary: a plan's prompt chunks and decodes", "[step_summary]") {
  step_plan plan;
  plan.step_id = 42;
  plan.seqs.push_back(planned(1, 1, 10, 8));   // decode: one token past an 8-token prompt
  plan.seqs.push_back(planned(2, 16, 0, 40));  // first chunk of a 40-token prompt
  plan.seqs.push_back(planned(3, 1, 0, 1));    // a one-token prompt: prefill, not a decode
  plan.seqs.push_back(planned(4, 12, 0, 5));   // recompute after preemption (prompt + generated)
  auto s = summarize_plan(plan, 64);
  CHECK(s.first_step_id == 42);
  CHECK(s.last_step_id == 42);
  CHECK(s.num_steps == 1);
  CHECK(s.token_budget == 64);
  REQUIRE(s.seqs.size() == 4);
  CHECK(s.seqs[0].id == 1);
  CHECK(s.seqs[0].num_decode_tokens == 1);
  CHECK(s.seqs[0].num_prefill_tokens == 0);
  CHECK(s.seqs[0].position == 10);
  CHECK(s.seqs[1].num_prefill_tokens == 16);
  CHECK(s.seqs[1].num_decode_tokens == 0);
  CHECK(s.seqs[2].num_prefill_tokens == 1);
  CHECK(s.seqs[3].num_prefill_tokens == 12);
  CHECK(s.num_prefill_tokens == 29);
  CHECK(s.num_decode_tokens == 1);
  CHECK(s.max_step_tokens == 30);
  CHECK(s.max_step_seqs == 4);
  CHECK(s.num_fused_steps == 1);

  step_plan decodes;
  decodes.seqs.push_back(planned(1, 1, 11, 8));
  decodes.seqs.push_back(planned(2, 1, 40, 40));
  auto d = summarize_plan(decodes, 64);
  CHECK(d.num_decode_tokens == 2);
  CHECK(d.num_prefill_tokens == 0);
  CHECK(d.num_fused_steps == 0);

  // A decode with 3 drafted tokens: one decode and 3 draft rows, not a prompt chunk.
  step_plan drafted;
  drafted.seqs.push_back(planned(1, 4, 11, 8));
  drafted.seqs.back().num_draft = 3;
  drafted.seqs.push_back(planned(2, 1, 40, 40));
  auto r = summarize_plan(drafted, 64);
  CHECK(r.num_decode_tokens == 2);
  CHECK(r.num_prefill_tokens == 0);
  CHECK(r.num_draft_tokens == 3);
  CHECK(r.num_tokens() == 5);
  CHECK(r.max_step_tokens == 5);
  CHECK(r.seqs[0].num_decode_tokens == 1);
  CHECK(r.seqs[0].num_draft_tokens == 3);
  CHECK(r.seqs[1].num_draft_tokens == 0);

  // Rows of a LoRA adapter name it; base rows name none.
  step_plan with_adapter;
  auto sql = std::make_shared<lora_adapter>();
  sql->name = "sql";
  with_adapter.adapters.push_back(sql);
  with_adapter.seqs.push_back(planned(1, 1, 11, 8));
  with_adapter.seqs.back().adapter = 0;
  with_adapter.seqs.push_back(planned(2, 1, 40, 40));
  auto w = summarize_plan(with_adapter, 64);
  CHECK(w.seqs[0].adapter == "sql");
  CHECK(w.seqs[1].adapter.empty());
}

TEST_CASE("step summary: merging two steps adds counts and keeps the first position", "[step_summary]") {
  auto a = step(1, {{1, 16, 0, 0}, {2, 0, 1, 30}}, 1.0);
  a.joined = {1};
  a.num_joined = 1;
  a.kv_usage = a.max_kv_usage = 0.5;
  a.num_waiting = 3;
  a.num_running = 2;
  auto b = step(2, {{2, 0, 1, 31}, {1, 8, 0, 16}, {3, 0, 1, 5}}, 1.002);
  b.finished = {{2, finish_reason::length}};
  b.num_finished = 1;
  b.preempted = {3};
  b.num_preemptions = 1;
  b.kv_usage = b.max_kv_usage = 0.25;
  b.num_waiting = 1;
  b.num_running = 1;
  merge_summary(a, b, 8);
  CHECK(a.first_step_id == 1);
  CHECK(a.last_step_id == 2);
  CHECK(a.num_steps == 2);
  CHECK(a.start_s == 1.0);
  CHECK(a.end_s == Approx(1.003));
  CHECK(a.busy_s == Approx(0.002));
  CHECK(a.num_prefill_tokens == 24);
  CHECK(a.num_decode_tokens == 3);
  CHECK(a.max_step_tokens == 17);
  CHECK(a.max_step_seqs == 3);
  CHECK(a.num_fused_steps == 2);
  REQUIRE(a.seqs.size() == 3);
  CHECK(a.seqs[0].id == 1);
  CHECK(a.seqs[0].num_prefill_tokens == 24);
  CHECK(a.seqs[0].position == 0);
  CHECK(a.seqs[1].id == 2);
  CHECK(a.seqs[1].num_decode_tokens == 2);
  CHECK(a.seqs[1].position == 30);
  CHECK(a.seqs[2].id == 3);
  CHECK(a.joined == std::vector<seq_id>{1});
  REQUIRE(a.finished.size() == 1);
  CHECK(a.finished[0].reason == finish_reason::length);
  CHECK(a.preempted == std::vector<seq_id>{3});
  CHECK(a.num_preemptions == 1);
  CHECK(a.kv_usage == 0.25);      // after the last step
  CHECK(a.max_kv_usage == 0.5);
  CHECK(a.num_waiting == 1);
  CHECK(a.num_running == 1);
}

TEST_CASE("step summary: lists stop at max_seqs, sums stay exact", "[step_summary]") {
  auto a = step(1, {{1, 0, 1, 0}, {2, 0, 1, 0}}, 0);
  auto b = step(2, {{3, 0, 1, 0}, {1, 0, 1, 1}, {4, 4, 0, 0}}, 0);
  b.joined = {3, 4};
  b.num_joined = 2;
  merge_summary(a, b, 2);
  CHECK(a.seqs.size() == 2);
  CHECK(a.seqs[0].num_decode_tokens == 2);  // a known sequence still merges when full
  CHECK(a.num_seqs_dropped == 2);
  CHECK(a.num_decode_tokens == 4);
  CHECK(a.num_prefill_tokens == 4);
  CHECK(a.joined.size() == 2);
  CHECK(a.num_joined == 2);

  step_queue q(4, 3);
  std::vector<step_seq> many;
  for (seq_id i = 1; i <= 10; ++i) many.push_back({i, 0, 1, 0});
  auto big = step(1, many, 0);
  for (seq_id i = 1; i <= 10; ++i) big.finished.push_back({i, finish_reason::stop});
  big.num_finished = 10;
  q.push(big);
  auto out = q.take();
  REQUIRE(out.size() == 1);
  CHECK(out[0].seqs.size() == 3);
  CHECK(out[0].num_seqs_dropped == 7);
  CHECK(out[0].finished.size() == 3);
  CHECK(out[0].num_finished == 10);
  CHECK(out[0].num_decode_tokens == 10);
}

TEST_CASE("step queue: a full queue merges adjacent pairs before taking more", "[step_summary]") {
  step_queue q(4, 16);
  for (std::uint64_t i = 1; i <= 4; ++i) q.push(step(i, {{1, 0, 1, int(i)}}, double(i)));
  CHECK(q.size() == 4);
  CHECK(q.num_compactions() == 0);
  q.push(step(5, {{1, 0, 1, 5}}, 5.0));
  CHECK(q.size() == 3);
  CHECK(q.num_compactions() == 1);
  auto out = q.take();
  CHECK(q.is_empty());
  REQUIRE(out.size() == 3);
  CHECK(out[0].first_step_id == 1);
  CHECK(out[0].last_step_id == 2);
  CHECK(out[0].num_steps == 2);
  CHECK(out[0].seqs.size() == 1);
  CHECK(out[0].seqs[0].num_decode_tokens == 2);
  CHECK(out[1].first_step_id == 3);
  CHECK(out[1].last_step_id == 4);
  CHECK(out[2].first_step_id == 5);
  CHECK(out[2].num_steps == 1);
  // Drained, it takes single steps again.
  q.push(step(6, {{1, 0, 1, 6}}, 6.0));
  CHECK(q.take().at(0).num_steps == 1);
}

TEST_CASE("step queue: bounded, lossless in counts, in order (randomized)", "[step_summary]") {
  std::mt19937 rng(12345);
  const std::size_t capacity = 8, max_seqs = 5;
  step_queue q(capacity, max_seqs);
  std::uint64_t next_id = 1, expected_next = 1;
  long pushed_prefill = 0, pushed_decode = 0, taken_prefill = 0, taken_decode = 0;
  int pushed_finished = 0, taken_finished = 0, taken_steps = 0;
  for (int round = 0; round < 400; ++round) {
    const int num_pushes = int(rng() % 40);
    for (int i = 0; i < num_pushes; ++i) {
      std::vector<step_seq> seqs;
      const int n = 1 + int(rng() % 9);
      for (int k = 0; k < n; ++k) {
        const bool is_decode = rng() % 3 != 0;
        seqs.push_back({seq_id(1 + rng() % 12), is_decode ? 0 : 1 + int(rng() % 30), is_decode ? 1 : 0, 0});
      }
      auto s = step(next_id++, seqs, 0);
      if (rng() % 4 == 0) {
        s.finished.push_back({seqs[0].id, finish_reason::stop});
        s.num_finished = 1;
      }
      pushed_prefill += s.num_prefill_tokens;
      pushed_decode += s.num_decode_tokens;
      pushed_finished += s.num_finished;
      q.push(std::move(s));
      REQUIRE(q.size() <= capacity);
    }
    if (rng() % 3 == 0 || round == 399) {
      for (const auto& e : q.take()) {
        REQUIRE(e.first_step_id == expected_next);  // contiguous, oldest first
        REQUIRE(e.last_step_id - e.first_step_id + 1 == std::uint64_t(e.num_steps));
        REQUIRE(e.seqs.size() <= max_seqs);
        REQUIRE(e.finished.size() <= max_seqs);
        expected_next = e.last_step_id + 1;
        taken_steps += e.num_steps;
        taken_prefill += e.num_prefill_tokens;
        taken_decode += e.num_decode_tokens;
        taken_finished += e.num_finished;
      }
    }
  }
  CHECK(std::uint64_t(taken_steps) == next_id - 1);
  CHECK(taken_prefill == pushed_prefill);
  CHECK(taken_decode == pushed_decode);
  CHECK(taken_finished == pushed_finished);
  CHECK(q.num_compactions() > 0);
}

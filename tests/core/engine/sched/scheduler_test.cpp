#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "core/model/lora.hpp"
#include "tests/core/engine/sched/sched_harness.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

seq_request make_request(seq_id id, int prompt_len, int max_tokens, int priority = 0) {
  seq_request r;
  r.id = id;
  for (int i = 0; i < prompt_len; ++i) r.prompt.push_back(1 + (static_cast<int>(id) * 7 + i) % 30);
  r.params.max_tokens = max_tokens;
  r.priority = priority;
  return r;
}

/// One step: schedule, run on the fake backend, apply. Returns the plan.
step_plan run_step(sched_rig& s, fake_backend& backend, std::vector<seq_event>* events = nullptr) {
  auto plan = s.schedule();
  REQUIRE(plan.has_value());
  check_step_invariants(s, *plan);
  if (plan->seqs.empty()) return *plan;
  auto res = backend.execute(*plan);
  REQUIRE(res.has_value());
  auto ev = s.apply(*res);
  REQUIRE(ev.has_value());
  if (events != nullptr) events->insert(events->end(), ev->begin(), ev->end());
  return *plan;
}

const seq_step* find_step(const step_plan& plan, seq_id id) {
  for (const auto& st : plan.seqs)
    if (st.id == id) return &st;
  return nullptr;
}

}  // namespace

TEST_CASE("scheduler: a prompt is prefilled, then decoded one token a step", "[core][sched]") {
  auto config = make_config(16, 4);
  auto s = make_scheduler(config, 16, 4, load_policy("splitfuse"));
  fake_backend backend(16, 4, 32);
  REQUIRE(s.submit(make_request(1, 10, 3)).has_value());
  auto p1 = run_step(s, backend);
  REQUIRE(p1.seqs.size() == 1);
  CHECK(p1.seqs[0].tokens.size() == 10);
  CHECK(p1.seqs[0].start_position == 0);
  CHECK(p1.seqs[0].do_sample);
  CHECK(p1.seqs[0].sample_index == 0);
  CHECK(p1.seqs[0].block_table == std::vector<block_id>{0, 1, 2});
  std::vector<seq_event> events;
  auto p2 = run_step(s, backend, &events);
  CHECK(p2.seqs[0].tokens.size() == 1);
  CHECK(p2.seqs[0].start_position == 10);
  CHECK(p2.seqs[0].sample_index == 1);
  CHECK(p2.seqs[0].block_table == std::vector<block_id>{0, 1, 2});
  run_step(s, backend, &events);
  REQUIRE(events.size() == 3);  // token, token, finished
  CHECK(events[2].type == seq_event::kind::finished);
  CHECK(events[2].reason == finish_reason::length);
  CHECK(events[2].num_generated_tokens == 3);
  CHECK(!s.has_work());
  CHECK(s.num_free_blocks() < 16);    // the release goes out with the next request
  REQUIRE(s.schedule().has_value());  // no work: only the release
  CHECK(s.num_free_blocks() == 16);
}

TEST_CASE("scheduler: chunked prefill samples only at the end of the known tokens", "[core][sched]") {
  auto config = make_config(4, 4);
  auto s = make_scheduler(config, 16, 4, load_policy("fcfs"));
  fake_backend backend(16, 4, 32);
  auto req = make_request(1, 10, 2);
  req.params.repetition_penalty = 1.2f;
  REQUIRE(s.submit(req).has_value());
  auto a = run_step(s, backend);
  auto b = run_step(s, backend);
  auto c = run_step(s, backend);
  CHECK(a.seqs[0].tokens.size() == 4);
  CHECK(!a.seqs[0].do_sample);
  CHECK(b.seqs[0].start_position == 4);
  CHECK(!b.seqs[0].do_sample);
  CHECK(c.seqs[0].tokens.size() == 2);
  CHECK(c.seqs[0].do_sample);
  CHECK(c.seqs[0].history == req.prompt);  // penalties on: the history travels
  CHECK(c.seqs[0].num_prompt_tokens == 10);
  CHECK(a.seqs[0].history.empty());
}

TEST_CASE("scheduler: submit refuses bad requests with clear errors", "[core][sched]") {
  auto config = make_config(8, 2, 20);
  auto s = make_scheduler(config, 16, 4, load_policy("fcfs"));
  CHECK(s.max_context() == 20);
  REQUIRE(s.submit(make_request(1, 5, 2)).has_value());
  auto dup = s.submit(make_request(1, 5, 2));
  REQUIRE(!dup.has_value());
  CHECK(dup.error().message.find("already") != std::string::npos);
  CHECK(!s.submit(make_request(2, 0, 2)).has_value());
  CHECK(!s.submit(make_request(3, 4, 0)).has_value());
  auto too_long = s.submit(make_request(4, 21, 2));
  REQUIRE(!too_long.has_value());
  CHECK(too_long.error().message.find("21 tokens") != std::string::npos);
  CHECK(s.num_waiting() == 1);
  CHECK(s.finish(99, finish_reason::stop).error().code == errc::not_found);
}

TEST_CASE("scheduler: reaching the context length finishes with reason length", "[core][sched]") {
  auto config = make_config(64, 2, 20);
  auto s = make_scheduler(config, 16, 4, load_policy("fcfs"));
  fake_backend backend(16, 4, 32);
  REQUIRE(s.submit(make_request(1, 18, 100)).has_value());
  REQUIRE(s.submit(make_request(2, 20, 100)).has_value());
  std::vector<seq_event> events;
  while (s.has_work()) run_step(s, backend, &events);
  std::map<seq_id, int> num_tokens;
  for (const auto& e : events) {
    if (e.type == seq_event::kind::token) ++num_tokens[e.id];
    else CHECK(e.reason == finish_reason::length);
  }
  CHECK(num_tokens[1] == 2);
  CHECK(num_tokens[2] == 1);
}

TEST_CASE("scheduler: stop tokens, eos and ignore_eos", "[core][sched]") {
  // The fake backend's first token for this prompt is known after one solo run.
  auto probe = make_request(1, 6, 1);
  token_id first = run_alone(probe, 64, 32).at(0);
  auto config = make_config(64, 4);
  config.eos_token_ids = {first};
  auto s = make_scheduler(config, 16, 4, load_policy("fcfs"));
  fake_backend backend(16, 4, 32);
  auto eos = make_request(1, 6, 5);
  auto ignoring = make_request(1, 6, 5);
  ignoring.id = 2;
  ignoring.params.ignore_eos = true;
  auto stop_id = make_request(1, 6, 5);
  stop_id.id = 3;
  stop_id.params.stop_token_ids = {first};
  stop_id.params.ignore_eos = true;
  for (const auto& r : {eos, ignoring, stop_id}) REQUIRE(s.submit(r).has_value());
  std::vector<seq_event> events;
  while (s.has_work()) run_step(s, backend, &events);
  std::map<seq_id, finish_reason> reasons;
  std::map<seq_id, int> counts;
  for (const auto& e : events) {
    if (e.type == seq_event::kind::finished) reasons[e.id] = e.reason;
    else ++counts[e.id];
  }
  CHECK(reasons[1] == finish_reason::stop);
  CHECK(counts[1] == 1);  // the stop token is the last token event
  CHECK(reasons[2] == finish_reason::length);
  CHECK(counts[2] == 5);
  CHECK(reasons[3] == finish_reason::stop);
}

TEST_CASE("scheduler: finish and cancel free blocks, also mid-step", "[core][sched]") {
  auto config = make_config(64, 4);
  auto s = make_scheduler(config, 16, 4, load_policy("fcfs"));
  fake_backend backend(16, 4, 32);
  REQUIRE(s.submit(make_request(1, 8, 50)).has_value());
  REQUIRE(s.submit(make_request(2, 8, 50)).has_value());
  run_step(s, backend);
  CHECK(s.num_free_blocks() == 12);
  auto plan = s.schedule();
  REQUIRE(plan.has_value());
  CHECK(!s.schedule().has_value());  // one step in flight at a time
  auto ev = s.cancel(1);  // the client left while the step ran
  REQUIRE(ev.has_value());
  CHECK(ev->reason == finish_reason::cancelled);
  auto res = backend.execute(*plan);
  REQUIRE(res.has_value());
  auto applied = s.apply(*res);
  REQUIRE(applied.has_value());
  REQUIRE(applied->size() == 1);  // only sequence 2's token
  CHECK((*applied)[0].id == 2);
  auto stopped = s.finish(2, finish_reason::stop);  // a stop string matched
  REQUIRE(stopped.has_value());
  CHECK(stopped->num_generated_tokens == 2);
  REQUIRE(s.schedule().has_value());
  CHECK(s.num_free_blocks() == 16);
  CHECK(!s.has_work());
  CHECK(s.counters().num_finished == 2);
}

TEST_CASE("scheduler: apply checks the step, fail_step finishes with error", "[core][sched]") {
  auto config = make_config(64, 4);
  auto s = make_scheduler(config, 16, 4, load_policy("fcfs"));
  CHECK(!s.apply(step_result{}).has_value());
  REQUIRE(s.submit(make_request(1, 8, 5)).has_value());
  auto plan = s.schedule();
  REQUIRE(plan.has_value());
  step_result wrong;
  wrong.step_id = plan->step_id + 1;
  CHECK(!s.apply(wrong).has_value());
  step_result missing;
  missing.step_id = plan->step_id;
  CHECK(!s.apply(missing).has_value());
  auto events = s.fail_step({errc::backend_error, "device lost"});
  REQUIRE(events.size() == 1);
  CHECK(events[0].reason == finish_reason::error);
  REQUIRE(events[0].cause.has_value());
  CHECK(events[0].cause->code == errc::backend_error);
  CHECK(events[0].cause->message == "device lost");
  REQUIRE(s.schedule().has_value());
  CHECK(s.num_free_blocks() == 16);
  CHECK(!s.has_pending_step());
}

TEST_CASE("scheduler: preemption by recompute keeps generated tokens", "[core][sched]") {
  // 6 blocks of 4: two sequences of 8-token prompts fill 4, decoding needs more
  for (bool is_caching : {false, true}) {
    INFO("prefix caching " << is_caching);
    auto config = make_config(64, 4);
    config.enable_prefix_caching = is_caching;
    auto s = make_scheduler(config, 6, 4, load_policy("fcfs"));
    fake_backend backend(6, 4, 32);
    auto a = make_request(1, 8, 10), b = make_request(2, 8, 10);
    REQUIRE(s.submit(a).has_value());
    REQUIRE(s.submit(b).has_value());
    std::map<seq_id, std::vector<token_id>> out;
    std::map<seq_id, int> num_computed;  // before this step
    int num_recomputes = 0, num_cached_resumes = 0;
    while (s.has_work()) {
      std::vector<seq_event> events;
      auto plan = run_step(s, backend, &events);
      for (const auto& st : plan.seqs) {
        if (st.start_position < num_computed[st.id]) {
          // recompute: prompt + generated tokens again (after the blocks still cached),
          // sampling continues where it was
          ++num_recomputes;
          if (st.start_position > 0) ++num_cached_resumes;
          auto known = (st.id == 1 ? a : b).prompt;
          known.insert(known.end(), out[st.id].begin(), out[st.id].end());
          REQUIRE(st.start_position + st.tokens.size() <= known.size());
          CHECK(std::equal(st.tokens.begin(), st.tokens.end(), known.begin() + st.start_position));
          CHECK(st.do_sample == (st.start_position + st.tokens.size() == known.size()));
          CHECK(st.sample_index == out[st.id].size());
        }
        num_computed[st.id] = st.start_position + static_cast<int>(st.tokens.size());
      }
      for (const auto& e : events)
        if (e.type == seq_event::kind::token) out[e.id].push_back(e.token.token);
    }
    CHECK(num_recomputes > 0);
    CHECK((num_cached_resumes > 0) == is_caching);  // with caching, its full blocks were kept
    CHECK(s.num_preemptions() >= 1);
    CHECK(out[1] == run_alone(a, s.max_context(), 32));
    CHECK(out[2] == run_alone(b, s.max_context(), 32));
    CHECK(s.num_rejected_decisions() == 0);
  }
}

TEST_CASE("scheduler: static never lets a request join a running batch", "[core][sched]") {
  auto config = make_config(64, 4);
  auto s = make_scheduler(config, 32, 4, load_policy("static"));
  fake_backend backend(32, 4, 32);
  REQUIRE(s.submit(make_request(1, 6, 4)).has_value());
  REQUIRE(s.submit(make_request(2, 9, 8)).has_value());
  auto first = run_step(s, backend);
  CHECK(first.seqs.size() == 2);
  CHECK(first.num_tokens() == 15);  // whole prompts, unchunked
  REQUIRE(s.submit(make_request(3, 5, 3)).has_value());
  int steps_with_batch = 0;
  while (s.find(1) != nullptr || s.find(2) != nullptr) {
    auto plan = run_step(s, backend);
    CHECK(find_step(plan, 3) == nullptr);
    ++steps_with_batch;
  }
  CHECK(steps_with_batch == 7);  // the batch lasts as long as its longest member
  auto next = run_step(s, backend);
  REQUIRE(find_step(next, 3) != nullptr);
  CHECK(find_step(next, 3)->tokens.size() == 5);
}

TEST_CASE("scheduler: splitfuse fills the token budget with several prompt chunks", "[core][sched]") {
  auto config = make_config(32, 8);
  auto s = make_scheduler(config, 64, 4, load_policy("splitfuse"));
  fake_backend backend(64, 4, 32);
  for (seq_id id = 1; id <= 3; ++id) REQUIRE(s.submit(make_request(id, 20, 5)).has_value());
  auto p1 = run_step(s, backend);
  CHECK(p1.num_tokens() == 32);  // 20 + a 12-token chunk
  REQUIRE(p1.seqs.size() == 2);
  CHECK(p1.seqs[1].tokens.size() == 12);
  auto p2 = run_step(s, backend);
  // decode first, then the rest of prompt 2, then prompt 3: all the work there is
  REQUIRE(p2.seqs.size() == 3);
  CHECK(p2.seqs[0].id == 1);
  CHECK(p2.seqs[0].tokens.size() == 1);
  CHECK(p2.num_tokens() == 1 + 8 + 20);
  // with a chunk cap, several prompts are partial in the same step
  auto capped = make_scheduler(config, 64, 4, load_policy("splitfuse", {{"max_chunk_tokens", "8"}}));
  for (seq_id id = 1; id <= 5; ++id) REQUIRE(capped.submit(make_request(id, 20, 5)).has_value());
  fake_backend backend2(64, 4, 32);
  auto p3 = run_step(capped, backend2);
  CHECK(p3.num_tokens() == 32);
  CHECK(p3.seqs.size() == 4);
}

TEST_CASE("scheduler: fcfs has at most one partial prefill per step", "[core][sched]") {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    auto config = make_config(pick(8, 40), pick(2, 8));
    auto s = make_scheduler(config, 512, 4, load_policy("fcfs"));
    fake_backend backend(512, 4, 32);
    seq_id next = 1;
    int num_partial_steps = 0;
    for (int step = 0; step < 400; ++step) {
      if (step < 300 && pick(0, 1) == 0) REQUIRE(s.submit(make_request(next++, pick(1, 60), pick(1, 10))).has_value());
      auto plan = run_step(s, backend);
      int partial = 0;  // chunks that stop short of the end of their sequence
      for (const auto& st : plan.seqs) partial += st.do_sample ? 0 : 1;
      CHECK(partial <= 1);
      num_partial_steps += partial;
    }
    CHECK(num_partial_steps > 0);  // the check above was exercised
  }
}

TEST_CASE("scheduler: priority preempts a lower-priority sequence when blocks are short", "[core][sched]") {
  auto config = make_config(64, 4);
  auto s = make_scheduler(config, 8, 4, load_policy("priority"));
  fake_backend backend(8, 4, 32);
  auto low = make_request(1, 24, 6, 0);
  REQUIRE(s.submit(low).has_value());
  std::vector<seq_event> events;
  run_step(s, backend, &events);
  CHECK(s.num_free_blocks() == 2);
  auto high = make_request(2, 12, 3, 5);
  REQUIRE(s.submit(high).has_value());
  auto plan = run_step(s, backend, &events);
  CHECK(find_step(plan, 1) == nullptr);
  REQUIRE(find_step(plan, 2) != nullptr);
  CHECK(find_step(plan, 2)->tokens.size() == 12);
  CHECK(s.num_preemptions() == 1);
  CHECK(s.find(1)->status == seq_status::preempted);
  std::map<seq_id, std::vector<token_id>> out;
  while (s.has_work()) run_step(s, backend, &events);
  for (const auto& e : events)
    if (e.type == seq_event::kind::token) out[e.id].push_back(e.token.token);
  CHECK(out[1] == run_alone(low, s.max_context(), 32));
  CHECK(out[2] == run_alone(high, s.max_context(), 32));
  CHECK(s.num_rejected_decisions() == 0);
}

TEST_CASE("scheduler: fcfs never starves an old long request", "[core][sched]") {
  auto config = make_config(8, 4);
  auto s = make_scheduler(config, 12, 4, load_policy("fcfs"));
  fake_backend backend(12, 4, 32);
  REQUIRE(s.submit(make_request(1, 30, 10)).has_value());
  seq_id next = 2;
  int finished_at = -1;
  for (int step = 0; step < 400 && finished_at < 0; ++step) {
    REQUIRE(s.submit(make_request(next++, 3, 4)).has_value());  // a short request every step
    std::vector<seq_event> events;
    run_step(s, backend, &events);
    for (const auto& e : events)
      if (e.id == 1 && e.type == seq_event::kind::finished) finished_at = step;
  }
  CHECK(finished_at >= 0);
  CHECK(finished_at < 60);
}

TEST_CASE("scheduler: randomized runs under every shipped policy", "[core][sched][random]") {
  // every shipped policy with its defaults, and the settings that change how it uses KV
  std::vector<std::pair<std::string, policy_settings>> variants;
  for (const auto& name : shipped_policies()) variants.push_back({name, {}});
  variants.push_back({"orca", {{"reserve_max_tokens", "false"}}});
  variants.push_back({"tgi", {{"reserve_max_tokens", "false"}}});
  variants.push_back({"tgi", {{"waiting_served_ratio", "0"}, {"max_batch_prefill_tokens", "6"}}});
  for (const auto& [name, settings] : variants) {
    // Orca and TGI reserve every block a request can need at admission: nobody is preempted
    const bool is_reserving = (name == "orca" || name == "tgi") &&
                              std::none_of(settings.begin(), settings.end(), [](const auto& kv) {
                                return kv.first == "reserve_max_tokens" && kv.second == "false";
                              });
    std::uint64_t num_preemptions = 0;
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      INFO("policy " << name << " (" << settings.size() << " settings) seed " << seed);
      random_run_options opt;
      opt.policy_name = name;
      opt.settings = settings;
      opt.seed = seed * 1000 + name.size() + settings.size();
      auto r = run_random(opt);  // invariants every step, no rejected decision, all finish
      CHECK(r.requests.size() > 100);
      check_against_solo_runs(r, opt.vocab);
      num_preemptions += r.counters.num_preemptions;
    }
    INFO("policy " << name << " (" << settings.size() << " settings)");
    if (is_reserving) CHECK(num_preemptions == 0);
    else CHECK(num_preemptions > 0);  // the tiny pools did force recomputes
  }
}

TEST_CASE("scheduler: a step holds at most max_loras_per_step LoRA adapters, the others wait", "[core][sched][lora]") {
  const auto adapter = [](const std::string& name) {
    auto a = std::make_shared<lora_adapter>();
    a->name = name;
    return std::shared_ptr<const lora_adapter>(std::move(a));
  };
  const auto a = adapter("a");
  const std::shared_ptr<const lora_adapter> of[] = {a, adapter("b"), adapter("c"), nullptr, a};
  for (const int limit : {0, 2}) {
    INFO("max_loras_per_step " << limit);
    auto config = make_config(64, 8);
    config.max_loras_per_step = limit;
    auto s = make_scheduler(config, 64, 4, load_policy("fcfs"));
    fake_backend backend(64, 4, 32);
    for (seq_id id = 1; id <= 5; ++id) {
      auto r = make_request(id, 5, 3);
      r.adapter = of[id - 1];
      REQUIRE(s.submit(std::move(r)).has_value());
    }
    std::vector<seq_event> events;
    std::size_t most = 0;
    bool is_c_in_first = false;
    for (int step = 0; s.has_work() && step < 50; ++step) {
      const auto plan = run_step(s, backend, &events);
      most = std::max(most, plan.adapters.size());
      for (const auto& st : plan.seqs) {  // each row carries its own sequence's adapter
        const auto& want = of[st.id - 1];
        REQUIRE((st.adapter >= 0) == (want != nullptr));
        if (want) CHECK(plan.adapters.at(std::size_t(st.adapter)) == want);
        if (step == 0 && st.id == 3) is_c_in_first = true;
      }
    }
    CHECK(!s.has_work());
    CHECK(std::count_if(events.begin(), events.end(), [](const seq_event& e) { return e.type == seq_event::kind::finished; }) == 5);
    if (limit == 0) {
      CHECK(most == 3);  // a, b and c in one step; a's two sequences share one entry
      CHECK(is_c_in_first);
      CHECK(s.counters().num_lora_waits == 0);
    } else {
      CHECK(most == 2);
      CHECK(!is_c_in_first);  // c waited for a and b to leave room
      CHECK(s.counters().num_lora_waits > 0);
    }
  }
}

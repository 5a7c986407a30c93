// The rules of prefill_first, orca and tgi on exact, hand-built views: each plugin's
// decide is called through the loader, and the test reads who got how many tokens.
#include <catch2/catch.hpp>

#include <map>

#include "tests/core/engine/sched/sched_harness.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

constexpr int block_size = 4;

int blocks_for(int tokens) { return (tokens + block_size - 1) / block_size; }

/// A view the test writes by hand: decoding or prefilling running sequences and
/// waiting ones, in the order they are added (the engine's queue order).
class view_builder {
 public:
  view_builder(int budget, int max_num_seqs, int num_free_blocks, int num_total_blocks = 1000) {
    budget_ = {budget, max_num_seqs, num_free_blocks, num_total_blocks, block_size};
  }
  /// A running sequence that decodes: prompt + generated tokens, all but the last computed.
  view_builder& decoding(std::uint64_t id, int prompt, int generated, int max_tokens = 8) {
    auto s = info(id, INFLIGHT_SEQ_RUNNING, prompt, generated, max_tokens);
    s.num_computed_tokens = s.num_tokens - 1;
    s.num_blocks_held = blocks_for(s.num_computed_tokens);
    s.num_tokens_needed = 1;
    running_.push_back(s);
    return *this;
  }
  /// A running sequence whose prompt is computed up to `computed`.
  view_builder& prefilling(std::uint64_t id, int prompt, int computed, int max_tokens = 8) {
    auto s = info(id, INFLIGHT_SEQ_RUNNING, prompt, 0, max_tokens);
    s.num_computed_tokens = computed;
    s.num_blocks_held = blocks_for(computed);
    s.num_tokens_needed = prompt - computed;
    running_.push_back(s);
    return *this;
  }
  view_builder& waiting(std::uint64_t id, int prompt, int max_tokens = 8) {
    waiting_.push_back(info(id, INFLIGHT_SEQ_WAITING, prompt, 0, max_tokens));
    return *this;
  }
  /// A preempted sequence: it recomputes prompt + generated tokens.
  view_builder& preempted(std::uint64_t id, int prompt, int generated, int max_tokens = 8) {
    waiting_.push_back(info(id, INFLIGHT_SEQ_PREEMPTED, prompt, generated, max_tokens));
    return *this;
  }

  /// Runs the policy's decide; returns tokens per scheduled id, in decision order.
  std::vector<std::pair<std::uint64_t, int>> decide(policy& p) {
    inflight_sched_view view{};
    view.step_id = 1;
    view.running = running_.data();
    view.num_running = running_.size();
    view.waiting = waiting_.data();
    view.num_waiting = waiting_.size();
    view.budget = budget_;
    std::vector<inflight_schedule_entry> entries(running_.size() + waiting_.size());
    std::vector<std::uint64_t> preempt(running_.size());
    inflight_decision d{entries.data(), entries.size(), 0, preempt.data(), preempt.size(), 0};
    REQUIRE(p.decide(view, d).has_value());
    CHECK(d.num_preempt == 0);  // none of these policies preempts on its own
    REQUIRE(d.num_scheduled <= entries.size());
    std::vector<std::pair<std::uint64_t, int>> out;
    for (std::size_t i = 0; i < d.num_scheduled; ++i) out.emplace_back(entries[i].seq_id, entries[i].num_tokens);
    return out;
  }

 private:
  inflight_seq_info info(std::uint64_t id, int state, int prompt, int generated, int max_tokens) {
    inflight_seq_info s{};
    s.seq_id = id;
    s.state = state;
    s.arrival_time = static_cast<double>(id);
    s.num_prompt_tokens = prompt;
    s.num_tokens = prompt + generated;
    s.num_generated_tokens = generated;
    s.max_tokens = max_tokens;
    s.num_tokens_needed = s.num_tokens;
    return s;
  }

  std::vector<inflight_seq_info> running_, waiting_;
  inflight_sched_budget budget_{};
};

using grants = std::vector<std::pair<std::uint64_t, int>>;

}  // namespace

TEST_CASE("prefill_first: a step prefills whole prompts in queue order, decodes paused", "[core][plugin][rules]") {
  auto p = load_policy("prefill_first");
  // two decodes run; three 4-token prompts wait; the budget holds two of them
  auto v = view_builder(10, 8, 100).decoding(1, 5, 2).decoding(2, 6, 1).waiting(3, 4).waiting(4, 4).waiting(5, 4);
  CHECK(v.decide(p) == grants{{3, 4}, {4, 4}});
  // head of line: the 8-token prompt goes, the 6-token one does not fit, the 1-token
  // one behind it waits too
  auto hol = view_builder(10, 8, 100).decoding(1, 5, 2).waiting(3, 8).waiting(4, 6).waiting(5, 1);
  CHECK(hol.decide(p) == grants{{3, 8}});
  // a preempted sequence recomputes prompt + generated tokens, ahead of arrivals
  auto pre = view_builder(16, 8, 100).decoding(1, 5, 2).preempted(7, 4, 3).waiting(3, 4);
  CHECK(pre.decide(p) == grants{{7, 7}, {3, 4}});
}

TEST_CASE("prefill_first: decodes every running sequence when no prompt fits", "[core][plugin][rules]") {
  auto p = load_policy("prefill_first");
  // the head prompt needs 3 blocks, 2 are free: a decode-only step
  auto blocks = view_builder(64, 8, 2).decoding(1, 5, 2).decoding(2, 3, 1).waiting(3, 12).waiting(4, 1);
  CHECK(blocks.decide(p) == grants{{1, 1}, {2, 1}});
  // no seat left
  auto seats = view_builder(64, 2, 100).decoding(1, 5, 2).decoding(2, 3, 1).waiting(3, 2);
  CHECK(seats.decide(p) == grants{{1, 1}, {2, 1}});
  // nothing waiting
  auto idle = view_builder(64, 8, 100).decoding(1, 5, 2);
  CHECK(idle.decide(p) == grants{{1, 1}});
}

TEST_CASE("prefill_first: a prompt longer than the budget is prefilled alone over several steps",
          "[core][plugin][rules]") {
  auto p = load_policy("prefill_first");
  // at the head, with its 7 blocks free: admitted alone with a budget's worth
  auto start = view_builder(10, 8, 100).decoding(1, 5, 2).waiting(3, 25).waiting(4, 2);
  CHECK(start.decide(p) == grants{{3, 10}});
  // behind a prompt that fits, it waits for the next prompt step
  auto behind = view_builder(10, 8, 100).waiting(4, 2).waiting(3, 25);
  CHECK(behind.decide(p) == grants{{4, 2}});
  // in flight: its prefill goes on alone, decodes and the next prompt wait
  auto going = view_builder(10, 8, 100).decoding(1, 5, 2).prefilling(3, 25, 10).waiting(4, 2);
  CHECK(going.decide(p) == grants{{3, 10}});
  // not all of its blocks free: decodes run instead
  auto no_room = view_builder(10, 8, 6).decoding(1, 5, 2).waiting(3, 25);
  CHECK(no_room.decide(p) == grants{{1, 1}});
}

TEST_CASE("orca: whole prompts join the decodes in the same step, first come first served",
          "[core][plugin][rules]") {
  auto p = load_policy("orca");
  auto v = view_builder(10, 8, 100).decoding(1, 5, 2).decoding(2, 6, 1).waiting(3, 4).waiting(4, 4).waiting(5, 4);
  CHECK(v.decide(p) == grants{{1, 1}, {2, 1}, {3, 4}, {4, 4}});
  // never chunked: 7 tokens are left after three decodes, the 8-token prompt waits,
  // and so does the 1-token prompt behind it
  auto whole = view_builder(10, 8, 100).decoding(1, 5, 2).decoding(2, 6, 1).decoding(6, 3, 1).waiting(3, 8).waiting(4, 1);
  CHECK(whole.decide(p) == grants{{1, 1}, {2, 1}, {6, 1}});
  // a seat limit stops admissions
  auto seats = view_builder(64, 3, 100).decoding(1, 5, 2).decoding(2, 6, 1).waiting(3, 4).waiting(4, 4);
  CHECK(seats.decide(p) == grants{{1, 1}, {2, 1}, {3, 4}});
}

TEST_CASE("orca and tgi: admission reserves the blocks of prompt + max_tokens", "[core][plugin][rules]") {
  // sequence 1 decodes: prompt 8 + 1 generated, max_tokens 9 -> it ends holding 16
  // tokens = 4 blocks; it holds 2 (8 computed) and needs 2 more. 5 blocks are free, so
  // 3 are not promised. Sequence 3 (prompt 4, max_tokens 9 -> 12 tokens = 3 blocks)
  // fits its reservation; sequence 4 behind it (1 block of prompt) would not.
  auto view = [] {
    return view_builder(64, 8, 5).decoding(1, 8, 1, 9).waiting(3, 4, 9).waiting(4, 4, 9);
  };
  auto orca = load_policy("orca");
  CHECK(view().decide(orca) == grants{{1, 1}, {3, 4}});
  auto tgi = load_policy("tgi", {{"waiting_served_ratio", "0"}});
  CHECK(view().decide(tgi) == grants{{3, 4}});
  // paged like vLLM: only the prompts' blocks count, both fit
  auto orca_paged = load_policy("orca", {{"reserve_max_tokens", "false"}});
  CHECK(view().decide(orca_paged) == grants{{1, 1}, {3, 4}, {4, 4}});
  auto tgi_paged = load_policy("tgi", {{"waiting_served_ratio", "0"}, {"reserve_max_tokens", "false"}});
  CHECK(view().decide(tgi_paged) == grants{{3, 4}, {4, 4}});
  // nothing runs: the first request starts even when its reservation exceeds the free
  // blocks (2 of 3 here), and nobody joins it
  auto lone = view_builder(64, 8, 2, 3).waiting(3, 4, 1000).waiting(4, 1, 1);
  CHECK(lone.decide(orca) == grants{{3, 4}});
}

TEST_CASE("orca: a prompt longer than the budget takes what the decodes leave", "[core][plugin][rules]") {
  auto p = load_policy("orca");
  auto start = view_builder(10, 8, 100).decoding(1, 5, 2).decoding(2, 6, 1).waiting(3, 25).waiting(4, 1);
  CHECK(start.decide(p) == grants{{1, 1}, {2, 1}, {3, 8}});
  auto going = view_builder(10, 8, 100).decoding(1, 5, 2).prefilling(3, 25, 8).waiting(4, 1);
  CHECK(going.decide(p) == grants{{1, 1}, {3, 9}});  // nobody joins meanwhile
}

TEST_CASE("tgi: a new batch needs waiting_served_ratio x running fitting requests", "[core][plugin][rules]") {
  auto p = load_policy("tgi");
  auto five_running = [] {
    view_builder v(64, 16, 100);
    for (std::uint64_t id = 1; id <= 5; ++id) v.decoding(id, 4, 3);
    return v;
  };
  // 5 waiting < floor(1.2 x 5) = 6: decode every running sequence
  auto few = five_running();
  for (std::uint64_t id = 11; id <= 15; ++id) few.waiting(id, 4);
  CHECK(few.decide(p) == grants{{1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}});
  // 6 waiting: one step prefills all six, the decodes pause
  auto enough = five_running();
  for (std::uint64_t id = 11; id <= 16; ++id) enough.waiting(id, 4);
  CHECK(enough.decide(p) == grants{{11, 4}, {12, 4}, {13, 4}, {14, 4}, {15, 4}, {16, 4}});
  // what counts is the batch that fits: 6 wait but max_batch_prefill_tokens holds 5
  auto capped = load_policy("tgi", {{"max_batch_prefill_tokens", "20"}});
  CHECK(enough.decide(capped).size() == 5);
  CHECK(enough.decide(capped).front() == std::pair<std::uint64_t, int>{1, 1});
  // ... and so do the seats: max_num_seqs 10 leaves 5 seats, a batch of 5 < 6
  auto seats = view_builder(64, 10, 100);
  for (std::uint64_t id = 1; id <= 5; ++id) seats.decoding(id, 4, 3);
  for (std::uint64_t id = 11; id <= 16; ++id) seats.waiting(id, 4);
  CHECK(seats.decide(p).size() == 5);
  CHECK(seats.decide(p).front().second == 1);
  // a lower ratio admits with fewer waiting
  auto eager = load_policy("tgi", {{"waiting_served_ratio", "0.5"}});
  auto two = five_running().waiting(11, 4).waiting(12, 4);
  CHECK(two.decide(eager) == grants{{11, 4}, {12, 4}});
}

TEST_CASE("tgi: after max_waiting_tokens steps without an admission any waiting request joins",
          "[core][plugin][rules]") {
  auto p = load_policy("tgi");
  auto running = [](int newest_generated) {
    view_builder v(64, 16, 100);
    v.decoding(1, 4, 40, 64).decoding(2, 4, 33, 64).decoding(3, 4, newest_generated, 64);
    v.waiting(11, 4);
    return v;
  };
  // the newest member has 19 tokens: 19 steps since its prefill step, still waiting
  CHECK(running(19).decide(p) == grants{{1, 1}, {2, 1}, {3, 1}});
  CHECK(running(20).decide(p) == grants{{11, 4}});
  auto patient = load_policy("tgi", {{"max_waiting_tokens", "30"}});
  CHECK(running(20).decide(patient).size() == 3);
  CHECK(running(30).decide(patient) == grants{{11, 4}});
  // nothing running: whatever fits starts
  auto idle = view_builder(64, 16, 100).waiting(11, 4);
  CHECK(idle.decide(p) == grants{{11, 4}});
}

TEST_CASE("tgi: a prompt longer than the prefill budget is prefilled alone", "[core][plugin][rules]") {
  auto p = load_policy("tgi", {{"max_batch_prefill_tokens", "8"}});
  auto start = view_builder(64, 16, 100).waiting(11, 20).waiting(12, 2);
  CHECK(start.decide(p) == grants{{11, 8}});
  auto going = view_builder(64, 16, 100).decoding(1, 4, 3).prefilling(11, 20, 8).waiting(12, 2);
  CHECK(going.decide(p) == grants{{11, 8}});  // decodes stay paused
}

TEST_CASE("whole-prompt policies refuse bad settings", "[core][plugin][rules]") {
  auto message = [](const std::string& name, const policy_settings& settings) {
    auto p = policy::try_load(plugin_dir(), name, settings);
    REQUIRE(!p.has_value());
    return p.error().message;
  };
  CHECK_THAT(message("prefill_first", {{"x", "1"}}), Catch::Contains("prefill_first takes no settings"));
  CHECK_THAT(message("orca", {{"reserve_max_tokens", "maybe"}}), Catch::Contains("reserve_max_tokens"));
  CHECK_THAT(message("orca", {{"chunk", "8"}}), Catch::Contains("unknown setting 'chunk'"));
  CHECK_THAT(message("tgi", {{"waiting_served_ratio", "-1"}}), Catch::Contains("waiting_served_ratio"));
  CHECK_THAT(message("tgi", {{"waiting_served_ratio", "nan"}}), Catch::Contains("waiting_served_ratio"));
  CHECK_THAT(message("tgi", {{"max_batch_prefill_tokens", "0"}}), Catch::Contains("max_batch_prefill_tokens"));
  CHECK_THAT(message("tgi", {{"max_waiting_tokens", "1.5"}}), Catch::Contains("max_waiting_tokens"));
  CHECK_THAT(message("tgi", {{"waiting_ratio", "1"}}), Catch::Contains("unknown setting 'waiting_ratio'"));
  CHECK(policy::try_load(plugin_dir(), "tgi",
                         {{"waiting_served_ratio", "0.8"}, {"max_waiting_tokens", "0"},
                          {"max_batch_prefill_tokens", "512"}, {"reserve_max_tokens", "false"}})
            .has_value());
}

namespace {

seq_request prompt_request(seq_id id, int prompt_len, int max_tokens) {
  seq_request r;
  r.id = id;
  for (int i = 0; i < prompt_len; ++i) r.prompt.push_back(1 + (static_cast<int>(id) * 5 + i) % 30);
  r.params.max_tokens = max_tokens;
  return r;
}

/// One engine step on the fake backend; returns tokens per sequence in the plan.
std::map<seq_id, int> step(sched_rig& s, fake_backend& backend) {
  auto plan = s.schedule();
  REQUIRE(plan.has_value());
  check_step_invariants(s, *plan);
  std::map<seq_id, int> out;
  for (const auto& st : plan->seqs) out[st.id] = static_cast<int>(st.tokens.size());
  if (plan->seqs.empty()) return out;
  auto res = backend.execute(*plan);
  REQUIRE(res.has_value());
  REQUIRE(s.apply(*res).has_value());
  return out;
}

}  // namespace

TEST_CASE("tgi through the engine: a lone arrival waits max_waiting_tokens steps, then pauses the decodes",
          "[core][sched][rules]") {
  auto s = make_scheduler(make_config(64, 8), 64, block_size, load_policy("tgi"));
  fake_backend backend(64, block_size, 32);
  for (seq_id id = 1; id <= 3; ++id) REQUIRE(s.submit(prompt_request(id, 4, 40)).has_value());
  CHECK(step(s, backend) == std::map<seq_id, int>{{1, 4}, {2, 4}, {3, 4}});  // nothing ran: all start
  REQUIRE(s.submit(prompt_request(4, 6, 5)).has_value());
  // 1 waiting < floor(1.2 x 3): the batch decodes until it has 20 tokens each
  for (int i = 0; i < 19; ++i) CHECK(step(s, backend) == std::map<seq_id, int>{{1, 1}, {2, 1}, {3, 1}});
  CHECK(step(s, backend) == std::map<seq_id, int>{{4, 6}});  // the prefill step pauses the decodes
  CHECK(step(s, backend) == std::map<seq_id, int>{{1, 1}, {2, 1}, {3, 1}, {4, 1}});
  CHECK(s.num_rejected_decisions() == 0);
}

TEST_CASE("prefill_first and orca through the engine: an arrival pauses the decodes or joins them",
          "[core][sched][rules]") {
  for (const char* name : {"prefill_first", "orca"}) {
    INFO("policy " << name);
    auto s = make_scheduler(make_config(64, 8), 64, block_size, load_policy(name));
    fake_backend backend(64, block_size, 32);
    for (seq_id id = 1; id <= 2; ++id) REQUIRE(s.submit(prompt_request(id, 4, 40)).has_value());
    CHECK(step(s, backend) == std::map<seq_id, int>{{1, 4}, {2, 4}});
    CHECK(step(s, backend) == std::map<seq_id, int>{{1, 1}, {2, 1}});
    REQUIRE(s.submit(prompt_request(3, 6, 5)).has_value());
    const auto next = step(s, backend);
    if (std::string(name) == "prefill_first") CHECK(next == std::map<seq_id, int>{{3, 6}});
    else CHECK(next == std::map<seq_id, int>{{1, 1}, {2, 1}, {3, 6}});
    CHECK(step(s, backend) == std::map<seq_id, int>{{1, 1}, {2, 1}, {3, 1}});
    CHECK(s.num_rejected_decisions() == 0);
  }
}

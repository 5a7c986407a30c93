#include <catch2/catch.hpp>

#include <random>

#include "tests/core/engine/sched/sched_harness.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

seq_request make_request(seq_id id, int prompt_len, int max_tokens) {
  seq_request r;
  r.id = id;
  for (int i = 0; i < prompt_len; ++i) r.prompt.push_back(1 + (static_cast<int>(id) * 7 + i) % 30);
  r.params.max_tokens = max_tokens;
  return r;
}

step_loop::executor_fn on(fake_backend& backend) {
  return [&backend](const step_plan& plan) { return backend.execute(plan); };
}

/// (id, token or -1 for a finish) of every event.
std::vector<std::pair<seq_id, int>> flatten(const std::vector<seq_event>& events) {
  std::vector<std::pair<seq_id, int>> out;
  for (const auto& e : events) out.emplace_back(e.id, e.type == seq_event::kind::token ? e.token.token : -1);
  return out;
}

}  // namespace

TEST_CASE("step_loop: a whole step gives the events of its halves", "[core][sched][step_loop]") {
  auto whole = make_scheduler(make_config(8, 3), 16, 4, load_policy("splitfuse"));
  auto halves = make_scheduler(make_config(8, 3), 16, 4, load_policy("splitfuse"));
  fake_backend whole_backend(16, 4, 32), halves_backend(16, 4, 32);
  for (seq_id id = 1; id <= 4; ++id) {
    REQUIRE(whole.submit(make_request(id, 3 + int(id) * 2, 4)).has_value());
    REQUIRE(halves.submit(make_request(id, 3 + int(id) * 2, 4)).has_value());
  }
  int num_steps = 0;
  while (whole.has_work()) {
    auto out = whole.step(on(whole_backend));
    REQUIRE(out.has_value());
    REQUIRE(!out->failure);
    REQUIRE(out->has_run());
    check_step_invariants(whole, step_plan{});
    auto plan = halves.schedule();
    REQUIRE(plan.has_value());
    auto res = halves_backend.execute(*plan);
    REQUIRE(res.has_value());
    auto events = halves.apply(*res);
    REQUIRE(events.has_value());
    CHECK(out->step_id == plan->step_id);
    CHECK(out->shape.num_tokens() == plan->num_tokens());
    CHECK(out->shape.num_seqs() == int(plan->seqs.size()));
    CHECK(flatten(out->events) == flatten(*events));
    ++num_steps;
  }
  CHECK(!halves.has_work());
  CHECK(num_steps > 4);
  // The last finishes' blocks go back with one more step, which runs nothing.
  REQUIRE(whole.loop().needs_step());
  auto last = whole.step(on(whole_backend));
  REQUIRE(last.has_value());
  CHECK(!last->has_run());
  CHECK(last->events.empty());
  CHECK(!whole.loop().needs_step());
  CHECK(whole.num_free_blocks() == 16);
}

TEST_CASE("step_loop: the shape gives each sequence's new tokens and context", "[core][sched][step_loop]") {
  auto s = make_scheduler(make_config(4, 2), 16, 4, load_policy("splitfuse"));
  fake_backend backend(16, 4, 32);
  REQUIRE(s.submit(make_request(1, 10, 3)).has_value());
  std::vector<std::pair<int, int>> seen;
  while (s.has_work()) {
    auto out = s.step(on(backend));
    REQUIRE(out.has_value());
    REQUIRE(out->shape.num_seqs() == 1);
    seen.emplace_back(out->shape.seqs[0].num_tokens, out->shape.seqs[0].num_context_tokens);
  }
  // A 10-token prompt in chunks of 4, then two decodes (the third token ends it).
  const std::vector<std::pair<int, int>> expected = {{4, 4}, {4, 8}, {2, 10}, {1, 11}, {1, 12}};
  CHECK(seen == expected);
}

TEST_CASE("step_loop: a failed executor finishes the step's sequences with its error", "[core][sched][step_loop]") {
  auto s = make_scheduler(make_config(16, 2), 16, 4, load_policy("fcfs"));
  fake_backend backend(16, 4, 32);
  REQUIRE(s.submit(make_request(1, 5, 4)).has_value());
  REQUIRE(s.submit(make_request(2, 5, 4)).has_value());
  REQUIRE(s.submit(make_request(3, 5, 4)).has_value());  // waits: two at a time
  auto out = s.step([](const step_plan&) -> result<step_result> {
    return make_error(errc::backend_error, "device lost");
  });
  REQUIRE(out.has_value());
  REQUIRE(out->failure.has_value());
  CHECK(out->failure->code == errc::backend_error);
  CHECK(out->failure->message.find("device lost") != std::string::npos);
  REQUIRE(out->events.size() == 2);
  for (const auto& e : out->events) {
    CHECK(e.type == seq_event::kind::finished);
    CHECK(e.reason == finish_reason::error);
  }
  // The engine serves on: 3 runs to its end, and every block comes back.
  std::vector<seq_event> rest;
  while (s.loop().needs_step()) {
    auto next = s.step(on(backend));
    REQUIRE(next.has_value());
    CHECK(!next->failure);
    rest.insert(rest.end(), next->events.begin(), next->events.end());
  }
  REQUIRE(!rest.empty());
  CHECK(rest.back().id == 3);
  CHECK(rest.back().reason == finish_reason::length);
  CHECK(s.num_free_blocks() == 16);
  CHECK(s.kv().num_sequences() == 0);
}

TEST_CASE("step_loop: step() refuses to run while a planned step is not applied", "[core][sched][step_loop]") {
  auto s = make_scheduler(make_config(16, 2), 16, 4, load_policy("fcfs"));
  fake_backend backend(16, 4, 32);
  REQUIRE(s.submit(make_request(1, 5, 2)).has_value());
  auto plan = s.schedule();
  REQUIRE(plan.has_value());
  REQUIRE(!plan->seqs.empty());
  auto out = s.step(on(backend));
  REQUIRE(!out.has_value());
  CHECK(out.error().code == errc::internal);
}

TEST_CASE("step_loop: random arrivals under every shipped policy keep the invariants and free every block",
          "[core][sched][step_loop]") {
  for (const auto& name : shipped_policies()) {
    INFO("policy " << name);
    std::mt19937_64 rng(7);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const int num_blocks = 12, block_size = 4;
    auto s = make_scheduler(make_config(40, 4, 40), num_blocks, block_size, load_policy(name));
    fake_backend backend(num_blocks, block_size, 32);
    std::map<seq_id, int> num_tokens, max_tokens;
    seq_id next_id = 1;
    for (int step = 0; step < 3000 && (step < 200 || s.loop().needs_step()); ++step) {
      if (step < 200 && pick(0, 2) == 0) {
        auto r = make_request(next_id, pick(1, 24), pick(1, 12));
        max_tokens[r.id] = r.params.max_tokens;
        REQUIRE(s.submit(r).has_value());
        ++next_id;
      }
      auto out = s.step(on(backend));
      REQUIRE(out.has_value());
      REQUIRE(!out->failure);
      check_step_invariants(s, step_plan{});
      REQUIRE(out->shape.num_tokens() <= 40);
      for (const auto& e : out->events) {
        if (e.type == seq_event::kind::token) ++num_tokens[e.id];
        else CHECK(e.reason == finish_reason::length);
      }
    }
    CHECK(!s.loop().needs_step());
    CHECK(s.num_free_blocks() == num_blocks);
    CHECK(s.kv().num_known_sequences() == 0);
    for (const auto& [id, n] : max_tokens) {
      INFO("sequence " << id);
      CHECK(num_tokens[id] == n);
    }
  }
}

namespace {

/// A loop on a clock the test sets, with the engine's limits around the scheduler.
struct timed_loop {
  std::shared_ptr<double> now = std::make_shared<double>(0.0);
  std::shared_ptr<admission_gate> gate = std::make_shared<admission_gate>(admission_gate::limits{8, 1000});
  step_loop loop;
  fake_backend backend{16, 4, 32};

  timed_loop(const scheduler_config& config, double max_queue_time_s, const std::string& pol = "fcfs")
      : loop(make(config, max_queue_time_s, pol)) {}

  step_loop make(const scheduler_config& config, double max_queue_time_s, const std::string& pol) {
    auto l = step_loop::try_create(config, 16, 4, load_policy(pol), [t = now] { return *t; },
                                   {.max_queue_time_s = max_queue_time_s, .gate = gate});
    REQUIRE(l.has_value());
    return std::move(*l);
  }
  /// As engine::submit: the request enters the gate, then the loop.
  std::optional<seq_event> submit(seq_request r) {
    REQUIRE(gate->try_enter(int(r.prompt.size())).has_value());
    return loop.submit(std::move(r));
  }
  step_outcome step() {
    auto out = loop.step([this](const step_plan& plan) { return backend.execute(plan); });
    REQUIRE(out.has_value());
    return std::move(*out);
  }
};

const seq_event* finished_of(const std::vector<seq_event>& events, seq_id id) {
  for (const auto& e : events)
    if (e.id == id && e.type == seq_event::kind::finished) return &e;
  return nullptr;
}

}  // namespace

TEST_CASE("step_loop: a request not started within max_queue_time fails with queue_timeout, a started one never",
          "[core][sched][step_loop]") {
  timed_loop t(make_config(64, 1), 5.0);  // one sequence at a time: 2 waits behind 1
  REQUIRE(!t.submit(make_request(1, 5, 50)));
  REQUIRE(!t.submit(make_request(2, 7, 4)));
  CHECK(t.gate->num_requests() == 2);
  t.step();
  CHECK(t.gate->num_requests() == 1);  // 1 started: it left the gate; 2 waits inside
  CHECK(t.loop.next_deadline() == 5.0);
  *t.now = 4.9;
  CHECK(finished_of(t.step().events, 2) == nullptr);
  *t.now = 5.0;
  auto out = t.step();
  const seq_event* expired = finished_of(out.events, 2);
  REQUIRE(expired != nullptr);
  CHECK(expired->reason == finish_reason::error);
  REQUIRE(expired->cause.has_value());
  CHECK(expired->cause->code == errc::queue_timeout);
  CHECK(expired->cause->message.find("server.max_queue_time_s") != std::string::npos);
  CHECK(expired->times.arrival == 0.0);
  CHECK(expired->times.finished == 5.0);
  CHECK(!expired->times.first_scheduled);
  CHECK(t.gate->num_requests() == 0);
  CHECK(t.gate->num_tokens() == 0);
  CHECK(!t.loop.next_deadline());
  // 1 started at 0: however long it runs, the queue limit is not its.
  *t.now = 100.0;
  while (t.loop.needs_step()) {
    for (const auto& e : t.step().events) {
      if (e.type == seq_event::kind::finished) CHECK(e.reason == finish_reason::length);
    }
  }
  CHECK(t.loop.kv().num_free_blocks() == 16);
}

TEST_CASE("step_loop: a request past its own deadline is aborted with timeout, running or waiting, and frees its blocks",
          "[core][sched][step_loop]") {
  timed_loop t(make_config(64, 1), 0.0);  // no queue limit
  auto running = make_request(1, 5, 50);
  running.timeout_s = 3.0;
  auto waiting = make_request(2, 5, 50);
  waiting.timeout_s = 2.0;
  waiting.arrival = 0.5;  // stamped at the edge, before it reached the loop
  *t.now = 1.0;
  REQUIRE(!t.submit(running));
  REQUIRE(!t.submit(waiting));
  CHECK(t.loop.sched().find(2)->times.arrival == 0.5);
  CHECK(t.loop.next_deadline() == 2.5);
  t.step();
  CHECK(t.loop.kv().num_free_blocks() < 16);
  *t.now = 2.5;
  auto first = t.step();
  const seq_event* late = finished_of(first.events, 2);
  REQUIRE(late != nullptr);
  CHECK(late->reason == finish_reason::aborted);
  CHECK(late->cause->code == errc::timeout);
  CHECK(late->cause->message.find("request deadline of 2 s") != std::string::npos);
  CHECK(finished_of(first.events, 1) == nullptr);
  CHECK(t.loop.next_deadline() == 4.0);
  *t.now = 4.0;
  auto second = t.step();
  const seq_event* aborted = finished_of(second.events, 1);
  REQUIRE(aborted != nullptr);
  CHECK(aborted->reason == finish_reason::aborted);
  CHECK(aborted->cause->code == errc::timeout);
  CHECK(aborted->times.first_token.has_value());
  CHECK(!second.has_run());  // nothing else to run
  while (t.loop.needs_step()) t.step();
  CHECK(t.loop.kv().num_free_blocks() == 16);
  CHECK(t.gate->num_requests() == 0);
}

TEST_CASE("step_loop: the admission gate is left once, at the first run or at a finish before it",
          "[core][sched][step_loop]") {
  timed_loop t(make_config(64, 1), 0.0);
  REQUIRE(!t.submit(make_request(1, 5, 3)));
  REQUIRE(!t.submit(make_request(2, 6, 3)));
  REQUIRE(!t.submit(make_request(3, 7, 3)));
  CHECK(t.gate->num_tokens() == 18);
  // A refused request (a duplicate id) leaves at once, with a finished event for its caller.
  auto refused = t.submit(make_request(3, 4, 3));
  REQUIRE(refused.has_value());
  CHECK(refused->type == seq_event::kind::finished);
  CHECK(refused->reason == finish_reason::error);
  CHECK(refused->cause->code == errc::invalid_argument);
  CHECK(refused->times.finished.has_value());
  CHECK(t.gate->num_tokens() == 18);
  t.step();  // 1 runs
  CHECK(t.gate->num_tokens() == 13);
  auto cancelled = t.loop.cancel(2);  // 2 never ran
  REQUIRE(cancelled.has_value());
  CHECK(cancelled->reason == finish_reason::cancelled);
  CHECK(t.gate->num_tokens() == 7);
  CHECK(!t.loop.cancel(2));  // not live any more: nothing, and nothing left twice
  CHECK(t.gate->num_tokens() == 7);
  while (t.loop.needs_step()) t.step();  // 3 runs after 1; a preemption would not count it again
  CHECK(t.gate->num_requests() == 0);
  CHECK(t.gate->num_tokens() == 0);
  // Draining: every later submit is refused (aborted, shutting_down) and leaves the gate.
  t.loop.drain();
  auto late = t.submit(make_request(9, 5, 3));
  REQUIRE(late.has_value());
  CHECK(late->reason == finish_reason::aborted);
  CHECK(late->cause->code == errc::shutting_down);
  CHECK(t.gate->num_requests() == 0);
}

TEST_CASE("step_loop: abort_all ends every live request and refuses later ones", "[core][sched][step_loop]") {
  timed_loop t(make_config(64, 1), 0.0);
  REQUIRE(!t.submit(make_request(1, 5, 30)));
  REQUIRE(!t.submit(make_request(2, 5, 30)));
  t.step();
  auto events = t.loop.abort_all({errc::shutting_down, "bye"});
  REQUIRE(events.size() == 2);
  for (const auto& e : events) {
    CHECK(e.reason == finish_reason::aborted);
    CHECK(e.cause->message == "bye");
  }
  CHECK(!t.loop.is_accepting());
  CHECK(t.gate->num_requests() == 0);
  while (t.loop.needs_step()) t.step();
  CHECK(t.loop.kv().num_free_blocks() == 16);
}

TEST_CASE("step_loop: the phases, driven apart as the actors drive them, count failed and good steps",
          "[core][sched][step_loop]") {
  auto now = std::make_shared<double>(0.0);
  auto kv = kv_manager::try_create(16, 4);
  REQUIRE(kv.has_value());
  auto sched = scheduler::try_create(make_config(64, 4), kv->snapshot(), load_policy("fcfs"), [now] { return *now; });
  REQUIRE(sched.has_value());
  step_loop loop(std::move(*sched));  // no KV manager of its own: the "kv-allocator" is this test's
  fake_backend backend(16, 4, 32);
  REQUIRE(!loop.submit(make_request(1, 5, 3)));
  REQUIRE(!loop.submit(make_request(2, 5, 3)));
  CHECK(!loop.step(on(backend)).has_value());  // step() needs a KV manager of the loop's own

  // A refused grant: the asked sequences finish with the allocator's error.
  auto opened = loop.open();
  REQUIRE(opened.request.has_value());
  CHECK(loop.is_stepping());
  auto refused = loop.on_grant(std::unexpected(error{errc::internal, "mailbox gone"}));
  CHECK(refused.plan.seqs.empty());
  REQUIRE(refused.events.size() == 2);
  CHECK(refused.events[0].cause->message == "kv allocator: mailbox gone");
  CHECK(loop.totals().num_failed_steps == 1);
  CHECK(loop.totals().num_consecutive_failed_steps == 1);
  CHECK(!loop.is_stepping());

  REQUIRE(!loop.submit(make_request(3, 5, 3)));
  // A failed execution.
  opened = loop.open();
  auto granted = loop.on_grant(kv->try_grant(*opened.request));
  REQUIRE(granted.plan.seqs.size() == 1);
  auto lost = loop.on_result(std::unexpected(error{errc::backend_error, "device lost"}));
  REQUIRE(lost.size() == 1);
  CHECK(lost[0].cause->message == "backend error: device lost");
  CHECK(loop.totals().num_steps == 1);
  CHECK(loop.totals().num_failed_steps == 2);
  CHECK(loop.totals().num_consecutive_failed_steps == 2);
  CHECK(loop.totals().last_step_error == "backend error: device lost");

  REQUIRE(!loop.submit(make_request(4, 5, 3)));
  // Good steps reset the consecutive count; tokens carry their time.
  int num_tokens = 0;
  while (loop.needs_step()) {
    *now += 1.0;
    opened = loop.open();
    if (!opened.request) break;
    granted = loop.on_grant(kv->try_grant(*opened.request));
    if (granted.plan.seqs.empty()) continue;
    for (const auto& e : loop.on_result(backend.execute(granted.plan))) {
      if (e.type != seq_event::kind::token) continue;
      ++num_tokens;
      CHECK(e.times.last_token == *now);
      CHECK(e.times.arrival == 0.0);
    }
  }
  CHECK(num_tokens == 3);
  CHECK(loop.totals().num_consecutive_failed_steps == 0);
  CHECK(loop.totals().num_failed_steps == 2);
  CHECK(kv->num_free_blocks() == 16);
}

// The scheduler actor's step summaries (actors/step_feed.hpp) from the real engine.
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "actors/step_feed.hpp"
#include "core/engine/sched/step_loop.hpp"
#include "tests/actors/engine/engine_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

class collect_steps final : public step_sink {
 public:
  void on_step(const step_summary& s) override {
    std::lock_guard lock(mutex_);
    steps_.push_back(s);
  }
  std::vector<step_summary> steps() const {
    std::lock_guard lock(mutex_);
    return steps_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<step_summary> steps_;
};

std::shared_ptr<collect_sink> run(engine& eng, const std::string& prompt, int max_tokens) {
  auto sink = std::make_shared<collect_sink>();
  auto req = greedy_request(eng, prompt, max_tokens);
  req.params.ignore_eos = true;
  REQUIRE(eng.submit(req, sink).has_value());
  return sink;
}

}  // namespace

TEST_CASE("step feed: a request's prompt chunks then decodes, and nothing without a sink", "[step_feed]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  constexpr int budget = 8, max_tokens = 6;
  auto eng = start_engine(stories_deployment("splitfuse", budget));
  auto steps = std::make_shared<collect_steps>();

  // Before a sink is installed the engine summarises nothing.
  REQUIRE(run(*eng, "One day", 3)->wait());
  eng->set_step_sink(steps);
  const std::string prompt = "Once upon a time, there was a little girl named Lily. She loved to play outside";
  const int num_prompt_tokens = int(greedy_request(*eng, prompt, 1).prompt.size());
  REQUIRE(num_prompt_tokens > 2 * budget);
  REQUIRE(run(*eng, prompt, max_tokens)->wait());
  const auto got = steps->steps();
  eng->set_step_sink(nullptr);
  REQUIRE(run(*eng, "One day", 3)->wait());
  CHECK(steps->steps().size() == got.size());  // nothing after the sink was removed

  REQUIRE(!got.empty());
  const seq_id id = got.front().seqs.at(0).id;
  CHECK(got.front().joined == std::vector<seq_id>{id});
  int position = 0, num_prefill = 0, num_decode = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const auto& s = got[i];
    INFO("summary " << i);
    CHECK(s.num_steps == 1);
    if (i > 0) CHECK(s.first_step_id == got[i - 1].last_step_id + 1);
    CHECK(s.token_budget == budget);
    CHECK(s.num_tokens() <= budget);
    CHECK(s.end_s >= s.start_s);
    REQUIRE(s.seqs.size() == 1);
    CHECK(s.seqs[0].id == id);
    CHECK(s.seqs[0].position == position);  // chunks, then decodes, back to back
    position += s.seqs[0].num_prefill_tokens + s.seqs[0].num_decode_tokens;
    num_prefill += s.num_prefill_tokens;
    num_decode += s.num_decode_tokens;
    if (num_prefill < num_prompt_tokens) CHECK(s.num_decode_tokens == 0);
    CHECK(s.num_running == (i + 1 < got.size() ? 1 : 0));
  }
  CHECK(num_prefill == num_prompt_tokens);
  CHECK(num_decode == max_tokens - 1);  // the last prompt chunk samples the first token
  REQUIRE(got.back().finished.size() == 1);
  CHECK(got.back().finished[0].id == id);
  CHECK(got.back().finished[0].reason == finish_reason::length);
  CHECK(got.back().kv_usage > 0.0);  // its blocks go back with the next step's kv request
}

TEST_CASE("step feed: preemptions and finishes are listed", "[step_feed]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  // 8 blocks of 16 tokens cannot hold two sequences of 100+ tokens: one is preempted.
  auto eng = start_engine(stories_deployment("splitfuse", 64, 8));
  auto steps = std::make_shared<collect_steps>();
  eng->set_step_sink(steps);
  auto a = run(*eng, "Once upon a time", 100);
  auto b = run(*eng, "The cat sat", 100);
  REQUIRE(a->wait());
  REQUIRE(b->wait());
  CHECK(a->finish().reason == finish_reason::length);
  CHECK(b->finish().reason == finish_reason::length);
  const auto num_preemptions = eng->snapshot().gauges.num_preemptions;
  REQUIRE(num_preemptions > 0);
  // A request can finish before the summary of the step that finished it reaches the
  // sink: wait for both finishes to be listed (the deadline only bounds a failing run).
  const auto num_listed_finishes = [&] {
    std::set<seq_id> ids;
    for (const auto& s : steps->steps())
      for (const auto& f : s.finished) ids.insert(f.id);
    return ids.size();
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (num_listed_finishes() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));

  int listed = 0;
  std::set<seq_id> preempted, finished;
  std::map<seq_id, int> num_joins;
  std::map<seq_id, int> last_position;
  bool is_recompute_seen = false;
  for (const auto& s : steps->steps()) {
    listed += s.num_preemptions;
    preempted.insert(s.preempted.begin(), s.preempted.end());
    for (auto id : s.joined) ++num_joins[id];
    for (const auto& f : s.finished) finished.insert(f.id);
    for (const auto& q : s.seqs) {
      // A preempted sequence comes back with a recompute: its position goes back, to 0
      // or (with prefix caching) to the end of its cached full blocks.
      const auto it = last_position.find(q.id);
      if (preempted.contains(q.id) && it != last_position.end() && q.position <= it->second)
        is_recompute_seen = true;
      last_position[q.id] = q.position;
    }
  }
  CHECK(listed == int(num_preemptions));
  CHECK(!preempted.empty());
  CHECK(is_recompute_seen);
  CHECK(num_joins.size() == 2);
  for (const auto& [id, n] : num_joins) CHECK(n == 1);  // a recompute is not a join
  CHECK(finished.size() == 2);
}

TEST_CASE("step feed: a prefix-cache hit joins past position 0", "[step_feed]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  auto eng = start_engine(stories_deployment("splitfuse", 64));
  const std::string prompt = "Once upon a time, there was a little girl named Lily. She loved to play outside";
  REQUIRE(run(*eng, prompt, 2)->wait());  // fills the cache with the prompt's full blocks
  auto steps = std::make_shared<collect_steps>();
  eng->set_step_sink(steps);
  REQUIRE(run(*eng, prompt, 2)->wait());
  eng->set_step_sink(nullptr);
  const auto got = steps->steps();
  REQUIRE(!got.empty());
  REQUIRE(got.front().seqs.size() == 1);
  const auto& first = got.front().seqs[0];
  CHECK(first.position > 0);  // started after the cached prefix
  CHECK(got.front().joined == std::vector<seq_id>{first.id});
}

TEST_CASE("engine: requests submitted together start in the same step, all or none", "[step_feed][submit_all]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  auto d = stories_deployment("fcfs", 256);
  d.server.max_waiting_requests = 4;
  auto eng = start_engine(d);
  auto steps = std::make_shared<collect_steps>();
  eng->set_step_sink(steps);
  const std::vector<std::string> prompts = {"Once upon a time", "The cat sat", "One day", "Lily saw a bird"};
  std::vector<std::shared_ptr<collect_sink>> sinks;
  std::vector<submission> all;
  for (const auto& p : prompts) {
    sinks.push_back(std::make_shared<collect_sink>());
    auto req = greedy_request(*eng, p, 4);
    req.params.ignore_eos = true;
    all.push_back({req, sinks.back()});
  }
  auto ids = eng->submit_all(all);
  REQUIRE(ids.has_value());
  REQUIRE(ids->size() == 4);
  for (const auto& s : sinks) REQUIRE(s->wait());
  for (const auto& s : sinks) CHECK(s->tokens().size() == 4);
  // One message to the scheduler: the first step plans all four.
  const auto got = steps->steps();
  REQUIRE_FALSE(got.empty());
  CHECK(got.front().num_joined == 4);
  std::set<seq_id> joined(got.front().joined.begin(), got.front().joined.end());
  CHECK(joined == std::set<seq_id>(ids->begin(), ids->end()));

  // One bad request refuses the lot, and nothing of it stays behind: none runs, and the
  // waiting-queue bound (4) counts none of them (a leak would refuse the next four).
  std::vector<std::shared_ptr<collect_sink>> refused;
  std::vector<submission> bad;
  for (int i = 0; i < 3; ++i) {
    refused.push_back(std::make_shared<collect_sink>());
    bad.push_back({greedy_request(*eng, prompts[std::size_t(i)], 4), refused.back()});
  }
  bad.push_back({generate_request{}, std::make_shared<collect_sink>()});  // an empty prompt
  auto no = eng->submit_all(bad);
  REQUIRE_FALSE(no.has_value());
  CHECK(no.error().code == errc::invalid_argument);
  sinks.clear();
  all.clear();
  for (const auto& p : prompts) {
    sinks.push_back(std::make_shared<collect_sink>());
    all.push_back({greedy_request(*eng, p, 2), sinks.back()});
  }
  auto again = eng->submit_all(all);
  INFO((again ? std::string() : again.error().message));
  REQUIRE(again.has_value());
  for (const auto& s : sinks) REQUIRE(s->wait());
  for (const auto& s : refused) {
    CHECK(s->num_events() == 0);
    CHECK(s->num_finishes() == 0);
  }
  // More than the bound at once is refused whole (queue_full), never half queued.
  all.clear();
  for (int i = 0; i < 5; ++i) all.push_back({greedy_request(*eng, "One day", 2), std::make_shared<collect_sink>()});
  auto over = eng->submit_all(all);
  REQUIRE_FALSE(over.has_value());
  CHECK(over.error().code == errc::queue_full);
  CHECK(all_blocks_return(*eng));
}

TEST_CASE("step feed: a finish no step carries is published on its own", "[step_feed]") {
  // The recorder alone: a cancel between steps with nothing left to run has no step to
  // ride on; on_idle publishes it (num_steps 0), and a finish a step will carry is not
  // published twice.
  step_feed feed;
  auto steps = std::make_shared<collect_steps>();
  feed.set_sink(steps);
  auto pol = policy::try_load(INFLIGHT_TEST_PLUGIN_DIR, "fcfs");
  REQUIRE(pol.has_value());
  auto loop = step_loop::try_create(scheduler_config{}, 16, 16, std::move(*pol));
  REQUIRE(loop.has_value());
  step_recorder rec;
  seq_event cancelled;
  cancelled.type = seq_event::kind::finished;
  cancelled.id = 7;
  cancelled.reason = finish_reason::cancelled;
  rec.on_idle(feed, loop->sched(), 1.0);
  CHECK(steps->steps().empty());  // nothing to publish
  rec.on_events(feed, {cancelled});
  rec.on_idle(feed, loop->sched(), 2.0);
  REQUIRE(steps->steps().size() == 1);
  const auto s = steps->steps().back();
  CHECK(s.num_steps == 0);
  CHECK(s.num_tokens() == 0);
  REQUIRE(s.finished.size() == 1);
  CHECK(s.finished[0].id == 7);
  CHECK(s.finished[0].reason == finish_reason::cancelled);
  CHECK(s.num_running == 0);
  rec.on_idle(feed, loop->sched(), 3.0);
  CHECK(steps->steps().size() == 1);  // published once
}

TEST_CASE("step feed: every cancel that empties the engine is listed, and the running count drops to 0", "[step_feed]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  auto eng = start_engine(stories_deployment("splitfuse", 64));
  auto steps = std::make_shared<collect_steps>();
  eng->set_step_sink(steps);
  // Cancels land at any point of the step cycle (a step in flight, the KV round trip,
  // between steps); each must reach the feed before anything else runs (a later
  // request's step would carry a finish left behind).
  const auto num_listed = [&] {
    std::set<seq_id> ids;
    for (const auto& s : steps->steps())
      for (const auto& f : s.finished)
        if (f.reason == finish_reason::cancelled) ids.insert(f.id);
    return ids.size();
  };
  constexpr int num_requests = 30;
  for (int i = 0; i < num_requests; ++i) {
    auto sink = std::make_shared<collect_sink>();
    auto req = greedy_request(*eng, "Once upon a time", 2000);
    req.params.ignore_eos = true;
    auto id = eng->submit(req, sink);
    REQUIRE(id.has_value());
    if (i % 3 != 0) REQUIRE(sink->wait_for_events(1 + i % 5));
    eng->cancel(*id);
    REQUIRE(sink->wait());
    CHECK(sink->finish().reason == finish_reason::cancelled);
    // The bound only limits a failing run.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (num_listed() < std::size_t(i + 1) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    INFO("request " << i);
    REQUIRE(num_listed() == std::size_t(i + 1));
    REQUIRE(!steps->steps().empty());
    CHECK(steps->steps().back().num_running == 0);
  }
}

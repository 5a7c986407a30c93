#pragma once
// Test harness for the scheduler: the scheduler and its KV manager wired as the engine
// wires them (without actors), and a fake backend whose KV memory holds token ids and
// whose sampled token is a hash of what the sequence reads back through its block
// table. A wrong block table, a block shared by mistake or a wrong recompute changes
// the outputs, so "same tokens as when run alone" checks all of them at once.

#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/engine/kv/kv_manager.hpp"
#include "core/engine/sched/scheduler.hpp"
#include "core/engine/sched/step_loop.hpp"
#include "tests/shipped_policies.hpp"

namespace inflight::test {

/// The plugin directory of the build: the shipped policies.
inline std::string plugin_dir() { return INFLIGHT_TEST_PLUGIN_DIR; }
/// Policies built only for the tests: broken ones and the example custom policy.
inline std::string test_only_plugin_dir() { return INFLIGHT_TEST_ONLY_PLUGIN_DIR; }

inline policy load_policy(const std::string& name, const policy_settings& settings = {},
                          const std::string& dir = plugin_dir()) {
  auto p = policy::try_load(dir, name, settings);
  INFO((p ? std::string() : p.error().message));
  REQUIRE(p.has_value());
  return std::move(*p);
}

inline scheduler_config make_config(int max_num_batched_tokens, int max_num_seqs, int max_seq_len = 0) {
  scheduler_config c;
  c.max_num_batched_tokens = max_num_batched_tokens;
  c.max_num_seqs = max_num_seqs;
  c.max_seq_len = max_seq_len;
  return c;
}

/// A clock that ticks once per call: arrivals are strictly ordered.
inline scheduler::clock_fn counting_clock() {
  auto t = std::make_shared<double>(0.0);
  return [t] { return *t += 1.0; };
}

/// A scheduler and the KV manager that owns its blocks: core's step_loop, with the
/// halves of a step apart so a test can look between them. schedule() is one engine
/// step's planning (scheduler.schedule() -> kv.try_grant() -> scheduler.on_grant());
/// step() is a whole step. With no work it still sends the releases, so the KV manager
/// gets its blocks back.
class sched_rig {
 public:
  explicit sched_rig(step_loop loop) : loop_(std::move(loop)) {}
  sched_rig(scheduler s, kv_manager kv) : loop_(std::move(s), std::move(kv)) {}

  result<step_plan> schedule() { return loop_.plan(); }
  result<step_outcome> step(const step_loop::executor_fn& execute, const step_loop::executor_fn& draft_execute = {}) {
    return loop_.step(execute, draft_execute);
  }
  /// The loop's refusal event as an error.
  result<void> submit(seq_request r) {
    if (auto refused = loop_.submit(std::move(r))) return std::unexpected(refused->cause.value_or(error{}));
    return {};
  }
  result<seq_event> finish(seq_id id, finish_reason reason, std::optional<error> cause = {}) {
    if (auto ev = loop_.finish(id, reason, std::move(cause))) return std::move(*ev);
    return make_error(errc::not_found, "sequence " + std::to_string(id) + " is not live");
  }
  result<seq_event> cancel(seq_id id) { return finish(id, finish_reason::cancelled); }
  result<std::vector<seq_event>> apply(const step_result& r) { return loop_.apply(r); }
  std::vector<seq_event> fail_step(const error& cause) { return loop_.fail_step(cause); }

  bool has_work() const { return sched().has_work(); }
  bool has_pending_step() const { return sched().has_pending_step(); }
  const sequence* find(seq_id id) const { return sched().find(id); }
  const std::vector<seq_id>& running() const { return sched().running(); }
  const std::deque<seq_id>& waiting() const { return sched().waiting(); }
  int num_running() const { return sched().num_running(); }
  int num_waiting() const { return sched().num_waiting(); }
  int max_context() const { return sched().max_context(); }
  const scheduler_config& config() const { return sched().config(); }
  const scheduler_counters& counters() const { return sched().counters(); }
  std::uint64_t num_preemptions() const { return sched().num_preemptions(); }
  std::uint64_t num_rejected_decisions() const { return sched().num_rejected_decisions(); }
  const std::string& last_rejection() const { return sched().last_rejection(); }
  /// The KV manager's count: releases reach it with the next schedule().
  int num_free_blocks() const { return kv().num_free_blocks(); }
  const scheduler& sched() const { return loop_.sched(); }
  const kv_manager& kv() const { return loop_.kv(); }
  step_loop& loop() { return loop_; }
  /// The kv request of the last schedule().
  const kv_request& last_request() const { return loop_.last_request(); }

 private:
  step_loop loop_;
};

inline sched_rig make_scheduler(const scheduler_config& config, int num_blocks, int block_size,
                                policy pol, step_loop_options options = {}) {
  auto loop = step_loop::try_create(config, num_blocks, block_size, std::move(pol), counting_clock(), std::move(options));
  INFO((loop ? std::string() : loop.error().message));
  REQUIRE(loop.has_value());
  return sched_rig(std::move(*loop));
}

class fake_backend {
 public:
  /// `tag_of(id)` is mixed into what sequence `id` writes: give sequences that must not
  /// share K/V (different cache salts) different tags, and a wrong share shows.
  fake_backend(int num_blocks, int block_size, int vocab, std::function<int(seq_id)> tag_of = {})
      : block_size_(block_size), vocab_(vocab), kv_(static_cast<std::size_t>(num_blocks * block_size), -1),
        tag_of_(std::move(tag_of)) {}

  result<step_result> execute(const step_plan& plan) {
    step_result out;
    out.step_id = plan.step_id;
    for (const auto& s : plan.seqs) {
      int end = s.start_position + static_cast<int>(s.tokens.size());
      if (static_cast<int>(s.block_table.size()) * block_size_ < end)
        return make_error(errc::internal, "block table too short for sequence " + std::to_string(s.id));
      const int tag = tag_of_ ? tag_of_(s.id) : 0;
      for (std::size_t i = 0; i < s.tokens.size(); ++i)
        kv_[slot(s, s.start_position + static_cast<int>(i))] = s.tokens[i] + tag * 100000;
      if (!s.do_sample) continue;
      std::uint64_t h = 1469598103934665603ull;
      for (int p = 0; p < end; ++p) {
        token_id t = kv_[slot(s, p)];
        if (t < 0) return make_error(errc::internal, "read an unwritten KV slot");
        h = (h ^ static_cast<std::uint64_t>(t)) * 1099511628211ull;
      }
      out.tokens.push_back({s.id, static_cast<token_id>((h >> 17) % static_cast<std::uint64_t>(vocab_)), 0.0f, {}});
    }
    return out;
  }

 private:
  std::size_t slot(const seq_step& s, int pos) const {
    return static_cast<std::size_t>(s.block_table[static_cast<std::size_t>(pos / block_size_)] * block_size_ +
                                    pos % block_size_);
  }
  int block_size_;
  int vocab_;
  std::vector<token_id> kv_;
  std::function<int(seq_id)> tag_of_;
};

/// Everything every step must satisfy. Right after schedule() the KV manager holds
/// tables for exactly the running sequences; after apply() also for those that
/// finished in it (their releases go out with the next request).
inline void check_step_invariants(const sched_rig& s, const step_plan& plan) {
  REQUIRE(plan.num_tokens() <= s.config().max_num_batched_tokens);
  REQUIRE(static_cast<int>(plan.seqs.size()) <= s.config().max_num_seqs);
  REQUIRE(s.num_running() <= s.config().max_num_seqs);
  std::set<seq_id> ids;
  for (const auto& st : plan.seqs) {
    REQUIRE(ids.insert(st.id).second);
    REQUIRE(!st.tokens.empty());
    auto table = s.kv().block_table(st.id);
    REQUIRE(st.block_table == std::vector<block_id>(table.begin(), table.end()));
  }
  auto ok = s.kv().check_invariants();
  INFO((ok ? std::string() : ok.error().message));
  REQUIRE(ok.has_value());
  const int block_size = s.kv().pool().block_size();
  for (seq_id id : s.running()) {
    const sequence* seq = s.find(id);
    REQUIRE(seq != nullptr);
    REQUIRE(seq->status == seq_status::running);
    REQUIRE(s.kv().has_table(id));
    REQUIRE(seq->num_blocks_held == static_cast<int>(s.kv().block_table(id).size()));
    REQUIRE(seq->num_blocks_held * block_size >= seq->num_computed_tokens);
    // Only full, computed, cached blocks are shared: a sequence never writes into one.
    auto table = s.kv().block_table(id);
    for (std::size_t k = 0; k < table.size(); ++k) {
      if (s.kv().pool().ref_count(table[k]) == 1) continue;
      REQUIRE(s.kv().pool().hash_of(table[k]) != nullptr);
      REQUIRE(static_cast<int>(k + 1) * block_size <= seq->num_computed_tokens);
    }
  }
  for (seq_id id : s.waiting()) REQUIRE(!s.kv().has_table(id));
  if (s.sched().has_pending_releases()) REQUIRE(s.kv().num_sequences() >= s.num_running());
  else REQUIRE(s.kv().num_sequences() == s.num_running());
}

struct random_run_options {
  std::string policy_name = "fcfs";
  std::string plugin_dir = test::plugin_dir();
  policy_settings settings;
  bool enable_prefix_caching = true;
  /// Prompts built from a few shared prefixes (and two cache salts), so blocks are
  /// shared, cached, hit and evicted.
  bool has_shared_prefixes = false;
  std::uint64_t seed = 1;
  int num_arrival_steps = 600;
  int max_steps = 20000;
  int vocab = 32;
  bool expect_no_rejections = true;
};

struct random_run_result {
  std::map<seq_id, seq_request> requests;
  std::map<seq_id, std::vector<token_id>> outputs;
  std::map<seq_id, finish_reason> reasons;
  std::map<seq_id, int> salts;  ///< 0 = none
  scheduler_counters counters;
  std::uint64_t num_evictions = 0;
  int max_context = 0;
  int num_steps = 0;
};

/// Runs a request to completion alone in a roomy engine: the reference output. `tag`
/// is what the fake backend mixes into its K/V (see fake_backend).
inline std::vector<token_id> run_alone(const seq_request& request, int max_context, int vocab, int tag = 0) {
  scheduler_config config;
  config.max_num_batched_tokens = 64;
  config.max_num_seqs = 1;
  config.max_seq_len = max_context;
  const int num_blocks = 64, block_size = 4;
  auto s = make_scheduler(config, num_blocks, block_size, load_policy("fcfs"));
  fake_backend backend(num_blocks, block_size, vocab, [tag](seq_id) { return tag; });
  REQUIRE(s.submit(request).has_value());
  std::vector<token_id> out;
  while (s.has_work()) {
    auto step = s.step([&](const step_plan& plan) { return backend.execute(plan); });
    REQUIRE(step.has_value());
    INFO((step->failure ? step->failure->message : std::string()));
    REQUIRE(!step->failure);
    for (const auto& e : step->events)
      if (e.type == seq_event::kind::token) out.push_back(e.token.token);
  }
  return out;
}

/// Random arrivals, prompt lengths, max_tokens, priorities and cancellations on a tiny
/// KV pool that forces preemption; checks the invariants after every step.
inline random_run_result run_random(const random_run_options& opt) {
  std::mt19937_64 rng(opt.seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  scheduler_config config;
  config.max_num_batched_tokens = pick(4, 40);
  config.max_num_seqs = pick(1, 6);
  config.max_seq_len = 40;
  config.enable_prefix_caching = opt.enable_prefix_caching;
  const int block_size = 4;
  const int num_blocks = pick(10, 16);  // 40..64 tokens: a few sequences at most
  auto s = make_scheduler(config, num_blocks, block_size, load_policy(opt.policy_name, opt.settings, opt.plugin_dir));
  random_run_result r;
  fake_backend backend(num_blocks, block_size, opt.vocab, [&r](seq_id id) {
    auto it = r.salts.find(id);
    return it == r.salts.end() ? 0 : it->second;
  });
  std::vector<std::vector<token_id>> prefixes;
  for (int i = 0; i < 4; ++i) {
    prefixes.emplace_back();
    for (int n = pick(4, 18); n > 0; --n) prefixes.back().push_back(pick(1, opt.vocab - 1));
  }
  r.max_context = s.max_context();
  seq_id next_id = 1;
  for (int step = 0; step < opt.max_steps; ++step) {
    if (step >= opt.num_arrival_steps && !s.has_work()) break;
    if (step < opt.num_arrival_steps && pick(0, 2) == 0) {
      seq_request req;
      req.id = next_id++;
      if (!opt.has_shared_prefixes) {
        for (int i = pick(1, 30); i > 0; --i) req.prompt.push_back(pick(1, opt.vocab - 1));
      } else {
        if (pick(0, 3) > 0) req.prompt = prefixes[static_cast<std::size_t>(pick(0, 3))];
        for (int i = pick(req.prompt.empty() ? 1 : 0, 12); i > 0; --i) req.prompt.push_back(pick(1, opt.vocab - 1));
        if (pick(0, 3) == 0) {
          r.salts[req.id] = 1;
          req.cache_salt = "tenant-1";
        }
      }
      req.params.max_tokens = pick(1, 20);
      if (pick(0, 1) == 0) req.params.stop_token_ids = {0};
      req.priority = pick(0, 3);
      r.requests[req.id] = req;
      REQUIRE(s.submit(req).has_value());
    }
    if (pick(0, 29) == 0 && s.has_work()) {
      seq_id victim = static_cast<seq_id>(pick(1, static_cast<int>(next_id)));
      if (s.find(victim) != nullptr) {
        auto ev = s.cancel(victim);
        REQUIRE(ev.has_value());
        r.reasons[victim] = finish_reason::cancelled;
      }
    }
    auto plan = s.schedule();
    REQUIRE(plan.has_value());
    check_step_invariants(s, *plan);
    if (plan->seqs.empty()) {
      REQUIRE(!s.has_work());  // progress: work always yields a step
      continue;
    }
    auto res = backend.execute(*plan);
    INFO((res ? std::string() : res.error().message));
    REQUIRE(res.has_value());
    auto events = s.apply(*res);
    REQUIRE(events.has_value());
    for (const auto& e : *events) {
      if (e.type == seq_event::kind::token) r.outputs[e.id].push_back(e.token.token);
      else r.reasons[e.id] = e.reason;
    }
    check_step_invariants(s, step_plan{});
    if (opt.expect_no_rejections) {
      INFO(s.last_rejection());
      REQUIRE(s.num_rejected_decisions() == 0);
    }
    ++r.num_steps;
  }
  REQUIRE(!s.has_work());
  REQUIRE(s.schedule().has_value());  // returns the last releases
  REQUIRE(s.num_free_blocks() == num_blocks);
  REQUIRE(s.kv().num_sequences() == 0);
  REQUIRE(s.kv().num_known_sequences() == 0);  // no hash chain left behind either
  r.counters = s.counters();
  r.num_evictions = s.kv().pool().num_evictions();
  return r;
}

/// Every request finished, and its tokens are those it produces alone (a prefix of
/// them when it was cancelled).
inline void check_against_solo_runs(const random_run_result& r, int vocab) {
  for (const auto& [id, req] : r.requests) {
    INFO("sequence " << id);
    REQUIRE(r.reasons.contains(id));
    auto alone = run_alone(req, r.max_context, vocab, r.salts.contains(id) ? r.salts.at(id) : 0);
    const auto& got = r.outputs.contains(id) ? r.outputs.at(id) : std::vector<token_id>{};
    if (r.reasons.at(id) == finish_reason::cancelled) {
      REQUIRE(got.size() <= alone.size());
      REQUIRE(std::equal(got.begin(), got.end(), alone.begin()));
    } else {
      REQUIRE(got == alone);
    }
  }
}

}  // namespace inflight::test

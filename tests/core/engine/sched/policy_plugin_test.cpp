#include <catch2/catch.hpp>

#include <algorithm>

#include "tests/core/engine/sched/sched_harness.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A policy whose decisions a test writes by hand, given to the engine as a vtable.
struct script {
  std::vector<inflight_schedule_entry> scheduled;
  std::vector<std::uint64_t> preempt;
  std::size_t extra_claimed = 0;  // claims more entries than it wrote
  bool fails = false;
};
script g_script;

inflight_policy_status script_create(const inflight_policy_setting*, std::size_t, void** state, char*,
                                     std::size_t) {
  *state = nullptr;
  return INFLIGHT_POLICY_OK;
}
void script_destroy(void*) {}
inflight_policy_status script_decide(void*, const inflight_sched_view*, inflight_decision* d) {
  if (g_script.fails) return INFLIGHT_POLICY_ERROR;
  std::size_t n = std::min(g_script.scheduled.size(), d->scheduled_capacity);
  std::copy_n(g_script.scheduled.begin(), n, d->scheduled);
  d->num_scheduled = n + g_script.extra_claimed;
  std::size_t m = std::min(g_script.preempt.size(), d->preempt_capacity);
  std::copy_n(g_script.preempt.begin(), m, d->preempt);
  d->num_preempt = m;
  return INFLIGHT_POLICY_OK;
}
const inflight_policy_vtable script_vtable = {INFLIGHT_POLICY_ABI_VERSION, "script", script_create,
                                              script_destroy, script_decide};

sched_rig make_scripted(const scheduler_config& config, int num_blocks, int block_size) {
  auto p = policy::try_from_vtable(&script_vtable);
  REQUIRE(p.has_value());
  return make_scheduler(config, num_blocks, block_size, std::move(*p));
}

seq_request request(seq_id id, int prompt_len, int max_tokens = 4) {
  seq_request r;
  r.id = id;
  r.prompt.assign(static_cast<std::size_t>(prompt_len), static_cast<token_id>(id % 30 + 1));
  r.params.max_tokens = max_tokens;
  return r;
}

int tokens_of(const step_plan& plan, seq_id id) {
  for (const auto& s : plan.seqs)
    if (s.id == id) return static_cast<int>(s.tokens.size());
  return 0;
}

}  // namespace

TEST_CASE("policy: built-in policies load by name from the plugin dir", "[core][plugin]") {
  const auto shipped = shipped_policies();
  for (const char* name : {"static", "fcfs", "splitfuse", "priority", "prefill_first", "orca", "tgi"})
    CHECK(std::find(shipped.begin(), shipped.end(), name) != shipped.end());
  auto listed = try_list_policies(plugin_dir());
  REQUIRE(listed.has_value());
  CHECK(std::is_sorted(listed->begin(), listed->end()));
  for (const auto& name : shipped) {
    INFO("policy " << name);
    CHECK(load_policy(name).name() == name);
    CHECK(std::find(listed->begin(), listed->end(), name) != listed->end());  // what --policy all runs
  }
  // the test-only plugins live apart, so `--policy all` never picks them up
  CHECK(std::find(listed->begin(), listed->end(), "test_garbage") == listed->end());
  auto test_only = try_list_policies(test_only_plugin_dir());
  REQUIRE(test_only.has_value());
  CHECK(std::find(test_only->begin(), test_only->end(), "shortest_first") != test_only->end());
  CHECK(!try_list_policies(plugin_dir() + "/no_such_dir").has_value());
  CHECK(load_policy(std::string(default_policy_name)).name() == "splitfuse");
}

TEST_CASE("policy: broken plugins are refused with clear errors", "[core][plugin]") {
  auto wrong = policy::try_load(test_only_plugin_dir(), "test_wrong_abi");
  REQUIRE(!wrong.has_value());
  CHECK(wrong.error().code == errc::unsupported);
  CHECK(contains(wrong.error().message, "inflight_policy_test_wrong_abi.so"));
  CHECK(contains(wrong.error().message, "version " + std::to_string(INFLIGHT_POLICY_ABI_VERSION + 41)));
  CHECK(contains(wrong.error().message, "loads versions 1 to 3"));

  auto no_entry = policy::try_load(test_only_plugin_dir(), "test_no_entry");
  REQUIRE(!no_entry.has_value());
  CHECK(no_entry.error().code == errc::not_found);
  CHECK(contains(no_entry.error().message, "inflight_policy_test_no_entry.so"));
  CHECK(contains(no_entry.error().message, "inflight_policy_entry"));

  auto missing = policy::try_load(plugin_dir(), "no_such_policy");
  REQUIRE(!missing.has_value());
  CHECK(missing.error().code == errc::not_found);
  CHECK(contains(missing.error().message, "inflight_policy_no_such_policy.so"));

  CHECK(policy::try_load(plugin_dir(), "../fcfs").error().code == errc::invalid_argument);
  auto not_a_library = policy::try_load_file(std::string(INFLIGHT_SOURCE_DIR) + "/plugins/abi/inflight_policy.h");
  REQUIRE(!not_a_library.has_value());
  CHECK(not_a_library.error().code == errc::io_error);
  CHECK(!policy::try_from_vtable(nullptr).has_value());
}

TEST_CASE("policy: settings are checked by the policy", "[core][plugin]") {
  auto fcfs = policy::try_load(plugin_dir(), "fcfs", {{"chunk", "3"}});
  REQUIRE(!fcfs.has_value());
  CHECK(contains(fcfs.error().message, "fcfs takes no settings"));
  auto bad_value = policy::try_load(plugin_dir(), "splitfuse", {{"max_chunk_tokens", "-3"}});
  REQUIRE(!bad_value.has_value());
  CHECK(contains(bad_value.error().message, "max_chunk_tokens"));
  CHECK(!policy::try_load(plugin_dir(), "priority", {{"preempt", "maybe"}}).has_value());
  CHECK(policy::try_load(plugin_dir(), "priority", {{"preempt", "false"}}).has_value());

  auto parsed = try_parse_policy_settings(R"({"max_chunk_tokens": 8, "mode": "x", "on": true})");
  REQUIRE(parsed.has_value());
  policy_settings expected{{"max_chunk_tokens", "8"}, {"mode", "x"}, {"on", "true"}};
  CHECK(*parsed == expected);
  CHECK(try_parse_policy_settings("").value().empty());
  CHECK(!try_parse_policy_settings("[1, 2]").has_value());
  CHECK(!try_parse_policy_settings("{oops").has_value());
}

TEST_CASE("policy: the engine clips or refuses each bad entry and counts it", "[core][plugin]") {
  auto config = make_config(10, 2);
  auto s = make_scripted(config, 8, 4);
  // six live sequences: the decision array holds six entries
  for (seq_id id = 1; id <= 6; ++id) REQUIRE(s.submit(request(id, 6)).has_value());
  g_script = {};
  g_script.scheduled = {{1, 100}, {1, 3}, {99, 4}, {2, -5}, {2, 6}, {3, 6}};
  auto plan = s.schedule();
  REQUIRE(plan.has_value());
  CHECK(tokens_of(*plan, 1) == 6);  // clipped to what it needs
  CHECK(tokens_of(*plan, 2) == 4);  // clipped to the budget left
  CHECK(tokens_of(*plan, 3) == 0);  // over max_num_seqs
  CHECK(s.num_rejected_decisions() == 6);
  CHECK(contains(s.last_rejection(), "max_num_seqs"));
  check_step_invariants(s, *plan);
}

TEST_CASE("policy: admissions beyond the free blocks are clipped or refused", "[core][plugin]") {
  auto config = make_config(64, 4);
  auto s = make_scripted(config, 5, 4);
  fake_backend backend(5, 4, 32);
  REQUIRE(s.submit(request(1, 12, 8)).has_value());
  g_script = {};
  g_script.scheduled = {{1, 12}};
  auto p1 = s.schedule();
  REQUIRE(p1.has_value());
  REQUIRE(s.apply(*backend.execute(*p1)).has_value());
  REQUIRE(s.submit(request(2, 12)).has_value());
  REQUIRE(s.submit(request(3, 4)).has_value());
  g_script.scheduled = {{1, 1}, {2, 12}, {3, 4}};  // 1 + 3 + 1 blocks wanted, 2 free
  auto p2 = s.schedule();
  REQUIRE(p2.has_value());
  CHECK(tokens_of(*p2, 1) == 1);
  CHECK(tokens_of(*p2, 2) == 4);  // the one block left after the decode
  CHECK(tokens_of(*p2, 3) == 0);
  CHECK(s.num_rejected_decisions() == 2);
  CHECK(contains(s.last_rejection(), "no free KV block"));
  CHECK(s.num_free_blocks() == 0);
  check_step_invariants(s, *p2);
}

TEST_CASE("policy: bad preemptions are refused, good ones recompute", "[core][plugin]") {
  auto config = make_config(64, 4);
  auto s = make_scripted(config, 16, 4);
  fake_backend backend(16, 4, 32);
  for (seq_id id = 1; id <= 4; ++id) REQUIRE(s.submit(request(id, 8)).has_value());
  g_script = {};
  g_script.scheduled = {{1, 8}, {2, 8}, {3, 8}, {4, 8}};
  auto p1 = s.schedule();
  REQUIRE(s.apply(*backend.execute(*p1)).has_value());
  REQUIRE(s.submit(request(5, 8)).has_value());
  g_script.preempt = {42, 5, 1, 1};  // unknown, waiting, fine, twice
  g_script.scheduled = {{1, 1}, {2, 1}, {5, 8}};
  auto p2 = s.schedule();
  REQUIRE(p2.has_value());
  CHECK(tokens_of(*p2, 1) == 0);  // preempted and scheduled at once: refused
  CHECK(tokens_of(*p2, 2) == 1);
  CHECK(tokens_of(*p2, 5) == 8);  // the seat sequence 1 left
  CHECK(s.num_preemptions() == 1);
  CHECK(s.find(1)->status == seq_status::preempted);
  CHECK(s.find(1)->num_computed_tokens == 0);
  CHECK(s.find(1)->num_generated_tokens() == 1);
  CHECK(s.waiting().front() == 1);
  CHECK(s.num_rejected_decisions() == 4);
  check_step_invariants(s, *p2);
}

TEST_CASE("policy: a policy that fails or schedules nothing cannot stall the engine", "[core][plugin]") {
  auto config = make_config(4, 4);
  auto s = make_scripted(config, 16, 4);
  fake_backend backend(16, 4, 32);
  REQUIRE(s.submit(request(1, 6, 2)).has_value());
  REQUIRE(s.submit(request(2, 3, 2)).has_value());
  g_script = {};
  g_script.extra_claimed = 5;  // claims more entries than the array holds
  auto p1 = s.schedule();
  REQUIRE(p1.has_value());
  CHECK(tokens_of(*p1, 1) == 4);  // the oldest request, clipped to the budget
  // the claim, two unwritten (unknown id 0) entries, and the empty decision
  CHECK(s.num_rejected_decisions() == 4);
  REQUIRE(s.apply(*backend.execute(*p1)).has_value());
  g_script.fails = true;
  int steps = 0;
  while (s.has_work() && steps < 50) {
    auto plan = s.schedule();
    REQUIRE(plan.has_value());
    REQUIRE(!plan->seqs.empty());
    REQUIRE(s.apply(*backend.execute(*plan)).has_value());
    ++steps;
  }
  CHECK(!s.has_work());
  CHECK(contains(s.last_rejection(), "scheduled nothing"));
}

TEST_CASE("policy: a garbage-deciding plugin never corrupts the engine", "[core][plugin][random]") {
  std::uint64_t total_rejections = 0;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    INFO("seed " << seed);
    random_run_options opt;
    opt.policy_name = "test_garbage";
    opt.plugin_dir = test_only_plugin_dir();
    opt.settings = {{"seed", std::to_string(seed)}};
    opt.seed = seed;
    opt.num_arrival_steps = 400;
    opt.expect_no_rejections = false;
    auto r = run_random(opt);  // invariants after every step, everything finishes
    check_against_solo_runs(r, opt.vocab);
    total_rejections += r.counters.num_rejected_decisions;
  }
  CHECK(total_rejections > 1000);
}

TEST_CASE("policy: the example custom policy runs clean", "[core][plugin][random]") {
  random_run_options opt;
  opt.policy_name = "shortest_first";  // examples/custom_policy, built in-tree for this test
  opt.plugin_dir = test_only_plugin_dir();
  opt.seed = 11;
  auto r = run_random(opt);  // no rejections: it respects budget, seats and blocks
  check_against_solo_runs(r, opt.vocab);
}

TEST_CASE("policy: a plugin built for ABI version 1 loads and gets the version-1 layout", "[core][plugin]") {
  auto p = policy::try_load(test_only_plugin_dir(), "test_v1");
  INFO((p ? std::string() : p.error().message));
  REQUIRE(p.has_value());
  CHECK(p->abi_version() == 1);
  CHECK(load_policy("fcfs").abi_version() == INFLIGHT_POLICY_ABI_VERSION);
  // It walks the queues with the 56-byte version-1 stride: given the 88-byte arrays it
  // would read garbage ids and counts from the second entry on.
  std::vector<inflight_seq_info> running(2), waiting(3);
  for (std::size_t i = 0; i < 5; ++i) {
    auto& s = i < 2 ? running[i] : waiting[i - 2];
    s.seq_id = 100 + i;
    s.state = i < 2 ? INFLIGHT_SEQ_RUNNING : INFLIGHT_SEQ_WAITING;
    s.num_tokens = s.num_prompt_tokens = 20;
    s.num_computed_tokens = i < 2 ? 19 : 0;
    s.num_blocks_held = i < 2 ? 2 : 0;
    s.num_tokens_needed = s.num_tokens - s.num_computed_tokens;
    s.num_cached_tokens = 7;  // version-2 fields: bytes a 56-byte stride would misread
    s.num_preemptions = 3;
  }
  std::vector<inflight_schedule_entry> entries(8);
  std::vector<std::uint64_t> preempt(1);
  inflight_sched_view view{};
  view.running = running.data();
  view.num_running = running.size();
  view.waiting = waiting.data();
  view.num_waiting = waiting.size();
  view.budget = {1000, 8, 100, 100, 16};
  inflight_decision d{entries.data(), entries.size(), 0, preempt.data(), 0, 0};
  REQUIRE(p->decide(view, d).has_value());
  std::vector<std::pair<std::uint64_t, int>> got;
  for (std::size_t i = 0; i < d.num_scheduled; ++i) got.emplace_back(entries[i].seq_id, entries[i].num_tokens);
  CHECK(got == std::vector<std::pair<std::uint64_t, int>>{{100, 1}, {101, 1}, {102, 20}, {103, 20}, {104, 20}});
  random_run_options opt;
  opt.policy_name = "test_v1";
  opt.plugin_dir = test_only_plugin_dir();
  opt.seed = 5;
  opt.has_shared_prefixes = true;
  auto r = run_random(opt);
  CHECK(r.counters.num_rejected_decisions == 0);  // every id and count it read was right
  check_against_solo_runs(r, opt.vocab);
  CHECK(r.counters.num_prefix_cache_hits > 0);
}

TEST_CASE("policy: a plugin built for ABI version 2 loads and gets the version-2 layout", "[core][plugin]") {
  auto p = policy::try_load(test_only_plugin_dir(), "test_v2");
  INFO((p ? std::string() : p.error().message));
  REQUIRE(p.has_value());
  CHECK(p->abi_version() == 2);
  // It walks the queues with the 64-byte version-2 stride and orders the waiting ones
  // by num_cached_tokens: given the 88-byte arrays it would misread ids and counts.
  std::vector<inflight_seq_info> running(1), waiting(3);
  for (std::size_t i = 0; i < 4; ++i) {
    auto& s = i < 1 ? running[i] : waiting[i - 1];
    s.seq_id = 200 + i;
    s.state = i < 1 ? INFLIGHT_SEQ_RUNNING : INFLIGHT_SEQ_WAITING;
    s.num_tokens = s.num_prompt_tokens = 40;
    s.num_cached_tokens = s.num_computed_tokens = i == 0 ? 39 : i == 2 ? 32 : i == 3 ? 16 : 0;
    s.num_blocks_held = i < 1 ? 3 : 0;
    s.num_tokens_needed = s.num_tokens - s.num_computed_tokens;
    s.ttft_target = 0.5;  // version-3 fields: bytes a 64-byte stride would misread
    s.tpot_target = 0.05;
    s.first_token_time = 1234.0;
  }
  std::vector<inflight_schedule_entry> entries(8);
  std::vector<std::uint64_t> preempt(1);
  inflight_sched_view view{};
  view.running = running.data();
  view.num_running = running.size();
  view.waiting = waiting.data();
  view.num_waiting = waiting.size();
  view.budget = {1000, 8, 100, 100, 16};
  view.now = 99.0;
  inflight_decision d{};
  d.scheduled = entries.data();
  d.scheduled_capacity = entries.size();
  d.preempt = preempt.data();
  REQUIRE(p->decide(view, d).has_value());
  std::vector<std::pair<std::uint64_t, int>> got;
  for (std::size_t i = 0; i < d.num_scheduled; ++i) got.emplace_back(entries[i].seq_id, entries[i].num_tokens);
  CHECK(got == std::vector<std::pair<std::uint64_t, int>>{{200, 1}, {202, 8}, {203, 24}, {201, 40}});
  random_run_options opt;
  opt.policy_name = "test_v2";
  opt.plugin_dir = test_only_plugin_dir();
  opt.seed = 6;
  opt.has_shared_prefixes = true;
  auto r = run_random(opt);
  CHECK(r.counters.num_rejected_decisions == 0);  // every id and count it read was right
  check_against_solo_runs(r, opt.vocab);
}

TEST_CASE("policy: lpm admits the longest cached prefix first, arrival order past max_waiting",
          "[core][plugin][prefix]") {
  // view: three waiting sequences, arrival order 1 2 3, cached prefixes 0, 32, 16
  std::vector<inflight_seq_info> waiting(3);
  for (int i = 0; i < 3; ++i) {
    auto& w = waiting[static_cast<std::size_t>(i)];
    w.seq_id = static_cast<std::uint64_t>(i + 1);
    w.state = INFLIGHT_SEQ_WAITING;
    w.arrival_time = i;
    w.num_tokens = w.num_prompt_tokens = 40;
    w.num_cached_tokens = w.num_computed_tokens = i == 1 ? 32 : i == 2 ? 16 : 0;
    w.num_tokens_needed = w.num_tokens - w.num_computed_tokens;
    w.max_tokens = 4;
  }
  auto order = [&](const policy_settings& settings) {
    auto p = load_policy("lpm", settings);
    std::vector<inflight_schedule_entry> entries(3);
    std::vector<std::uint64_t> preempt(1);
    inflight_sched_view view{};
    view.waiting = waiting.data();
    view.num_waiting = waiting.size();
    view.budget = {1000, 8, 100, 100, 16};
    inflight_decision d{entries.data(), entries.size(), 0, preempt.data(), 0, 0};
    REQUIRE(p.decide(view, d).has_value());
    std::vector<std::pair<std::uint64_t, int>> out;
    for (std::size_t i = 0; i < d.num_scheduled; ++i) out.emplace_back(entries[i].seq_id, entries[i].num_tokens);
    return out;
  };
  using v = std::vector<std::pair<std::uint64_t, int>>;
  CHECK(order({}) == v{{2, 8}, {3, 24}, {1, 40}});  // only what is left to compute
  CHECK(order({{"max_waiting", "2"}}) == v{{1, 40}, {2, 8}, {3, 24}});  // 3 waiting > 2
  CHECK(order({{"max_waiting", "0"}}) == v{{1, 40}, {2, 8}, {3, 24}});
  CHECK(!policy::try_load(plugin_dir(), "lpm", {{"max_waiting", "-1"}}).has_value());
  CHECK(!policy::try_load(plugin_dir(), "lpm", {{"chunk", "8"}}).has_value());
}

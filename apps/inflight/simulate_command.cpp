// `inflight simulate`: the real scheduler, policy plugins and KV manager on a virtual
// clock, each step's time from a cost model of a named GPU and model shape (see
// docs/simulate.md and core/bench/sim/). One row per policy and sweep value.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>

#include "apps/inflight/bench_plot.hpp"
#include "apps/inflight/bench_policies.hpp"
#include "apps/inflight/bench_report.hpp"
#include "apps/inflight/commands.hpp"
#include "apps/inflight/simulate_report.hpp"
#include "apps/inflight/simulate_sweep.hpp"
#include "core/bench/arrival.hpp"
#include "core/bench/gpu_specs.hpp"
#include "core/bench/policy_budget.hpp"
#include "core/bench/rerank_workload.hpp"
#include "core/bench/sim/profile_cost_model.hpp"
#include "core/bench/sim/simulator.hpp"
#include "core/engine/kv/block_pool.hpp"
#include "actors/engine/engine.hpp"
#include "core/model/formats/shapes.hpp"

namespace inflight::app {
namespace {

/// profile: the engine's time per step outside the backend, which a profile (the backend
/// alone) does not hold; measured by `bench offline` on the CPU (docs/simulate.md).
constexpr double default_engine_overhead_ms = 0.3;

struct simulate_options {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string workload = "variance";
  std::string dataset_path;  // a JSONL trace instead of a named workload (workload "trace")
  std::string size = "small";
  int cap = 0;
  int num_prompts = 0;
  std::uint64_t seed = 0;
  double request_rate = INFINITY;
  double burstiness = 1.0;
  std::vector<std::string> policies = {"static", "fcfs", "splitfuse"};
  std::string plugin_dir;
  std::string shape;  // "" = the profile's model, or llama-3.1-8b
  std::string gpu = "h100";
  std::string memory, bandwidth, flops;  // "" = the GPU's
  double utilization = 0.9;
  std::string weight_dtype = "bf16";
  std::string kv_dtype = "bf16";
  int num_kv_blocks = 0;
  std::string cost_model = "roofline";
  double bandwidth_efficiency = sim::roofline_options{}.bandwidth_efficiency;
  double compute_efficiency = sim::roofline_options{}.compute_efficiency;
  double step_overhead_ms = sim::roofline_options{}.step_overhead_s * 1e3;
  double engine_overhead_ms = -1.0;  // < 0: by the profile's source (default_engine_overhead_ms, or 0)
  double slo_ttft_ms = 0.0, slo_tpot_ms = 0.0, slo_e2e_ms = 0.0;
  std::string prefix_caching;  // on | off ("" = the deployment's)
  std::vector<std::string> sweeps;  // key=v1,v2,... each; several: every combination
  int replicas = 1;
  std::vector<std::string> route_policies;  // empty: the deployment's router.policy
  std::vector<std::string> route_settings;  // key=value
  std::vector<std::string> targets;         // METRIC-pNN=MS, e.g. ttft-p99=1000
  std::string json_path;
  std::string plot_dir;
  // How requests end and leave (see docs/simulate.md, "How a request ends").
  int max_tokens = 0;          // every request's limit; its output ends on its own below it
  bool stop_strings = false;   // ... by a stop string, not EOS
  double cancel_after_s = -1;  // every client cancels this long after its arrival
  std::string admission = "offline";  // offline | serve: the admission gate's bounds
  int max_concurrency = 0;            // closed-loop clients: calls in flight at most (0 = open)
  bool allow_failures = false;        // exit 0 although some run lost requests
  double first_step_delay_ms = 0.0;   // a cold engine's time before its first step
  double spec_acceptance = -1.0;      // speculative decoding: a drafted token's chance to be kept (< 0: none)
  std::vector<int> rerank_template;   // rerank: tokens before the query, around a document
};

/// The SLOs given (milliseconds on the command line); none = no goodput.
bench::slo objectives(const simulate_options& o) {
  bench::slo s;
  if (o.slo_ttft_ms > 0) s.ttft_s = o.slo_ttft_ms / 1e3;
  if (o.slo_tpot_ms > 0) s.tpot_s = o.slo_tpot_ms / 1e3;
  if (o.slo_e2e_ms > 0) s.e2el_s = o.slo_e2e_ms / 1e3;
  return s;
}

/// Workloads whose arrival times are part of what they measure.
bool has_own_schedule(const std::string& workload) { return workload == "interference" || workload == "prefix-chat"; }

bool is_rerank(const simulate_options& o) { return o.workload == "rerank"; }

/// The rerank workload's calls as token ids: every document of a call is a scoring request.
result<std::vector<bench::bench_prompt>> rerank_sim_prompts(const simulate_options& o, bench::workload_size size,
                                                            int vocab_size, std::mt19937_64& rng) {
  auto t = bench::default_rerank_template_tokens;
  if (!o.rerank_template.empty()) {
    if (o.rerank_template.size() != 3)
      fail("--rerank-template-tokens: three counts, BEFORE_QUERY,BEFORE_DOCUMENT,AFTER_DOCUMENT");
    t = {o.rerank_template[0], o.rerank_template[1], o.rerank_template[2]};
  }
  return bench::rerank_prompts(size, o.num_prompts, t, vocab_size, rng);
}

/// --max-tokens, --stop-strings, --cancel-after: how every request ends and leaves.
void apply_endings(const simulate_options& o, std::vector<bench::bench_prompt>& prompts) {
  for (auto& p : prompts) {
    if (o.max_tokens > 0) {
      if (o.max_tokens < p.output_len) {
        p.output_len = o.max_tokens;  // cut at its limit
        p.max_tokens = 0;
      } else if (o.max_tokens > p.output_len) {
        p.max_tokens = o.max_tokens;  // ends on its own before its limit
      }
    }
    if (o.stop_strings) p.ends_by_stop_string = true;
    if (o.cancel_after_s >= 0) p.cancel_after_s = o.cancel_after_s;
  }
}

/// The workload's prompts, arriving at `rate` (gamma gaps, --burstiness) when finite,
/// else at the workload's own times (all at t = 0 for most).
std::vector<bench::bench_prompt> sim_prompts(const simulate_options& o, double rate, int vocab_size) {
  auto size = bench::parse_workload_size(o.size);
  if (!size) fail(size.error().message);
  std::mt19937_64 rng(o.seed);
  auto prompts = !o.dataset_path.empty()
                     ? bench::load_trace(o.dataset_path, o.num_prompts, vocab_size, bench::prompt_format::ids, true, rng)
                 : is_rerank(o) ? rerank_sim_prompts(o, *size, vocab_size, rng)
                                : bench::workload_dataset({o.workload, *size, o.cap, o.num_prompts, vocab_size}, rng);
  if (!prompts) fail(prompts.error().message);
  for (auto& p : *prompts) {
    if (!p.prompt_ids.empty() || p.prompt_text.empty()) continue;
    // Text prompts (copy) without a tokenizer: a token for every 4 bytes, as English
    // text averages, each the same id for the same 4 bytes (so a repeat repeats).
    for (std::size_t at = 0; at < p.prompt_text.size(); at += 4) {
      std::uint64_t h = 1469598103934665603ull;
      for (char c : p.prompt_text.substr(at, 4)) h = (h ^ std::uint8_t(c)) * 1099511628211ull;
      p.prompt_ids.push_back(token_id(3 + h % std::uint64_t(std::max(1, vocab_size - 3))));
    }
    p.input_len = int(p.prompt_ids.size());
  }
  if (std::isfinite(rate)) {
    if (has_own_schedule(o.workload)) fail("--request-rate: the " + o.workload + " workload has its own arrival times");
    // A rerank call's documents arrive together: the rate is of calls.
    const int num_arrivals = is_rerank(o) ? prompts->back().group + 1 : int(prompts->size());
    auto times = bench::arrival_times(num_arrivals, {rate, o.burstiness}, rng);
    if (!times) fail(times.error().message);
    for (std::size_t i = 0; i < prompts->size(); ++i) {
      auto& p = (*prompts)[i];
      p.arrival_s = (*times)[is_rerank(o) ? std::size_t(p.group) : i];
    }
  }
  apply_endings(o, *prompts);
  return std::move(*prompts);
}

bench::hardware_spec gpu_spec(const simulate_options& o) {
  auto hw = bench::named_gpu(o.gpu);
  if (!hw) {
    std::string names;
    for (const auto& n : bench::gpu_names()) names += (names.empty() ? "" : ", ") + n;
    fail("--gpu: unknown GPU '" + o.gpu + "' (" + names + "; or override --gpu-memory, --bandwidth, --flops)");
  }
  auto quantity = [](const std::string& text, const std::vector<std::string_view>& units, const char* what) {
    auto v = bench::parse_quantity(text, units);
    if (!v) fail(std::string(what) + ": " + v.error().message);
    return *v;
  };
  if (!o.memory.empty()) hw->memory_bytes = quantity(o.memory, {"B"}, "--gpu-memory");
  if (!o.bandwidth.empty()) hw->bandwidth_bytes_per_s = quantity(o.bandwidth, {"B/s"}, "--bandwidth");
  if (!o.flops.empty()) hw->flops_per_s = quantity(o.flops, {"FLOP/s", "FLOPS", "FLOP"}, "--flops");
  hw->memory_utilization = o.utilization;
  return *hw;
}

/// Everything a run shares: the shape, the cost model, the KV pool.
struct sim_setup {
  model_config model;
  std::string shape;
  std::string device;  ///< the GPU's name, or the profile's device
  std::shared_ptr<const sim::step_cost_model> cost;
  int num_kv_blocks = 0;
};

model_config shape_or_fail(const std::string& name) {
  auto shape = named_shape(name);
  if (!shape) fail("--shape: unknown shape '" + name + "'");
  return *shape;
}

sim_setup make_roofline_setup(const simulate_options& o, const deployment& d) {
  sim_setup s;
  s.shape = o.shape.empty() ? "llama-3.1-8b" : o.shape;
  s.model = shape_or_fail(s.shape);
  s.device = o.gpu;
  const auto hw = gpu_spec(o);
  sim::roofline_options ro;
  ro.bandwidth_efficiency = o.bandwidth_efficiency;
  ro.compute_efficiency = o.compute_efficiency;
  ro.step_overhead_s = o.step_overhead_ms / 1e3;
  ro.weight_value_bytes = value_bytes(o.weight_dtype, "--weight-dtype");
  const double kv_bytes = value_bytes(o.kv_dtype, "--kv-dtype");
  if (kv_bytes != 2.0 && kv_bytes != 4.0) fail("--kv-dtype: the KV cache is f32, f16 or bf16");
  ro.kv_value_bytes = int(kv_bytes);
  auto cost = sim::roofline_cost_model::try_create(s.model, hw, ro);
  if (!cost) fail(cost.error().message);
  s.num_kv_blocks = o.num_kv_blocks;
  if (s.num_kv_blocks == 0) {
    // As `inflight plan` computes it: (memory x utilization - weights) / KV bytes per token.
    const double kv_budget = hw.memory_bytes * hw.memory_utilization - cost->weight_bytes();
    const double num_tokens = std::floor(kv_budget / cost->kv_bytes_per_token());
    if (num_tokens < d.engine.block_size)
      fail("the weights of " + s.shape + " leave no KV memory on " + o.gpu + " at utilization " +
           std::to_string(o.utilization));
    s.num_kv_blocks = int(std::min(num_tokens / d.engine.block_size, 1e9));
  }
  s.cost = std::make_shared<sim::roofline_cost_model>(std::move(*cost));
  return s;
}

/// --cost-model profile:FILE: the profile's fit; the shape is the profile's model unless
/// --shape names another; the KV pool is --num-kv-blocks or what the deployment's
/// engine.kv_blocks / engine.kv_memory give at the profile's KV type (as the engine does).
/// replay:FILE: the recorded steps themselves, in order (sim::replay_cost_model).
sim_setup make_profile_setup(const simulate_options& o, const deployment& d, const std::string& path, bool is_replay) {
  auto profile = sim::load_step_profile(path);
  if (!profile) fail(profile.error().message);
  sim_setup s;
  const std::string& measured = profile->origin.model;
  s.shape = o.shape.empty() ? measured : o.shape;
  if (!named_shape(s.shape)) fail("--shape: the profile's model '" + measured + "' is not a named shape; give --shape");
  s.model = shape_or_fail(s.shape);
  if (s.shape != measured)
    std::fprintf(stderr, "simulate: warning: --shape %s, but the profile was measured on %s\n", s.shape.c_str(),
                 measured.c_str());
  s.device = profile->origin.device;
  // Steps recorded inside the engine hold the engine's own time already.
  double overhead_ms = o.engine_overhead_ms;
  if (overhead_ms < 0.0) overhead_ms = profile->origin.source == "engine" ? 0.0 : default_engine_overhead_ms;
  if (!std::isfinite(overhead_ms)) fail("--engine-overhead-ms: a number >= 0");
  const std::string kv_dtype = profile->origin.kv_dtype;
  if (is_replay) {
    // The time between the recorded steps, when given (default 0).
    auto replay = sim::replay_cost_model::try_create(std::move(*profile), std::max(0.0, o.engine_overhead_ms) / 1e3);
    if (!replay) fail(replay.error().message);
    s.cost = std::make_shared<sim::replay_cost_model>(std::move(*replay));
  } else {
    auto cost = sim::profile_cost_model::try_create(std::move(*profile), overhead_ms / 1e3);
    if (!cost) fail(cost.error().message);
    s.cost = std::make_shared<sim::profile_cost_model>(std::move(*cost));
  }
  s.num_kv_blocks = o.num_kv_blocks;
  if (s.num_kv_blocks == 0) {
    const int element = kv_dtype == "f16" || kv_dtype == "bf16" ? 2 : 4;
    const auto per_token = kv_bytes_per_token(s.model.num_layers, s.model.num_kv_heads, s.model.head_dim, element);
    auto blocks = try_resolve_num_blocks({d.engine.block_size, d.engine.kv_blocks, d.engine.kv_memory_bytes}, per_token);
    if (!blocks) fail(blocks.error().message);
    s.num_kv_blocks = *blocks;
  }
  return s;
}

sim_setup make_setup(const simulate_options& o, const deployment& d) {
  if (o.cost_model.starts_with("profile:")) return make_profile_setup(o, d, o.cost_model.substr(8), false);
  if (o.cost_model.starts_with("replay:")) return make_profile_setup(o, d, o.cost_model.substr(7), true);
  if (o.cost_model != "roofline")
    fail("--cost-model: roofline, profile:FILE or replay:FILE, not '" + o.cost_model + "'");
  return make_roofline_setup(o, d);
}

/// The scheduler and KV pool of one run: the deployment's limits, a sweep point's
/// override, and the budget rule `bench offline` applies per policy and workload.
sim::sim_config run_config(const simulate_options& o, const deployment& base, const sim_setup& setup,
                           const std::string& policy, const sweep_point& point,
                           const std::vector<bench::bench_prompt>& prompts) {
  sim::sim_config c;
  c.scheduler.max_num_seqs = point.max_num_seqs.value_or(base.engine.max_num_seqs);
  const int budget = point.max_num_batched_tokens.value_or(base.engine.max_num_batched_tokens);
  c.scheduler.max_num_batched_tokens = o.workload == "interference" && !point.max_num_batched_tokens
                                           ? bench::interference_budget(prompts)
                                           : bench::offline_budget(policy, budget, c.scheduler.max_num_seqs, prompts);
  c.scheduler.max_seq_len = setup.model.max_seq_len;
  c.scheduler.enable_prefix_caching = base.engine.enable_prefix_caching;
  c.scheduler.seed = o.seed;
  c.num_kv_blocks = setup.num_kv_blocks;
  c.block_size = base.engine.block_size;
  c.objectives = objectives(o);
  for (const auto& t : parse_targets(o.targets)) {
    if (std::find(c.percentiles.begin(), c.percentiles.end(), t.percentile) == c.percentiles.end())
      c.percentiles.push_back(t.percentile);
  }
  std::sort(c.percentiles.begin(), c.percentiles.end());
  // Every request carries the goodput SLO as its latency targets (what the slo policy
  // plans for); without the flags, the deployment's [scheduler] defaults apply.
  c.targets = {o.slo_ttft_ms, o.slo_tpot_ms};
  c.scheduler.default_targets = {base.scheduler.ttft_target_ms, base.scheduler.tpot_target_ms};
  // The server's limits, as a served request meets them.
  c.max_queue_time_s = base.server.max_queue_time_s;
  c.request_timeout_s = base.server.request_timeout_s;
  // Each replica's admission gate: the deployment's, as `serve` meets its clients, or as
  // `bench offline` lifts it (room for every request of the workload).
  c.admission = admission_gate::limits{base.server.max_waiting_requests, base.server.max_waiting_tokens};
  if (o.admission == "offline") {
    // Every request is admitted and runs to its end, however long it waits: no
    // waiting-request or waiting-token bound, no queue time limit, no deadline.
    const auto room = bench::offline_admission(prompts);
    c.admission->max_requests = std::max(c.admission->max_requests, room.max_requests);
    c.admission->max_tokens = std::max(c.admission->max_tokens, room.max_tokens);
    c.max_queue_time_s = 0.0;
    c.request_timeout_s = 0.0;
  }
  c.max_concurrency = o.max_concurrency;
  c.first_step_delay_s = o.first_step_delay_ms / 1e3;
  if (o.spec_acceptance >= 0.0) {
    c.scheduler.speculative = speculative_config_of(base.speculative);
    if (c.scheduler.speculative.method.empty()) c.scheduler.speculative.method = "ngram";
    c.spec_acceptance = o.spec_acceptance;
  }
  return c;
}

/// The routing policy of a run on several replicas, from the plugin directory.
route_policy load_route_policy(const simulate_options& o, const deployment& base, const std::string& name) {
  auto route = try_load_route_policy(base.scheduler, name, parse_route_settings(o.route_settings));
  if (!route) fail("--route-policy " + name + ": " + route.error().message);
  return std::move(*route);
}

run_row run_one(const simulate_options& o, const deployment& base, const sim_setup& setup, const std::string& policy,
                const sweep_point& point, int replicas, const std::string& route) {
  run_row row{policy, point, replicas, replicas > 1 ? route : "-", point.request_rate.value_or(o.request_rate), 0, 0, {}, {}, {}};
  if (point.labels.empty()) {
    char rate[32];
    std::snprintf(rate, sizeof rate, "%g", row.request_rate);  // no sweep: the column shows the rate
    row.point.labels = {rate};
  }
  const auto prompts = sim_prompts(o, row.request_rate, setup.model.vocab_size);
  const auto c = run_config(o, base, setup, policy, point, prompts);
  auto settings = base.scheduler;
  // As bench offline: on interference, splitfuse chunks the long prompts (256 tokens).
  if (o.workload == "interference" && !settings.policy_settings.contains("splitfuse"))
    settings.policy_settings["splitfuse"] = "{\"max_chunk_tokens\": 256}";
  std::vector<inflight::policy> policies;  // one instance per replica
  for (int i = 0; i < replicas; ++i) {
    auto pol = try_load_policy(settings, policy);
    if (!pol) fail(policy + ": " + pol.error().message);
    policies.push_back(std::move(*pol));
  }
  std::optional<route_policy> router;
  if (replicas > 1) router.emplace(load_route_policy(o, base, route));
  std::fprintf(stderr, "simulate: %s, %zu requests, rate %g, budget %d, max_num_seqs %d, %d replica(s)%s...\n",
               policy.c_str(), prompts.size(), row.request_rate, c.scheduler.max_num_batched_tokens,
               c.scheduler.max_num_seqs, replicas, replicas > 1 ? (", routed by " + route).c_str() : "");
  const auto* replay = dynamic_cast<const sim::replay_cost_model*>(setup.cost.get());
  if (replay) replay->restart();
  auto r = sim::simulate(prompts, std::move(policies), std::move(router), c, *setup.cost);
  if (!r) fail(policy + ": " + r.error().message);
  if (replay) {
    row.replay = {replay->num_replayed(), replay->num_differing(), replay->num_recorded()};
    std::fprintf(stderr, "simulate: %s: %zu of %zu steps took a recorded step of their shape, %zu another's scaled by the fit "
                 "(%zu recorded)\n",
                 policy.c_str(), replay->num_replayed(), r->num_steps, replay->num_differing(), replay->num_recorded());
  }
  if (const auto line = failure_line(r->summary); !line.empty())
    std::fprintf(stderr, "simulate: %s: %s\n", policy.c_str(), line.c_str());
  row.budget = c.scheduler.max_num_batched_tokens;
  row.max_num_seqs = c.scheduler.max_num_seqs;
  row.result = std::move(*r);
  if (is_rerank(o)) row.calls = summarize_calls(row.result, prompts, c.percentiles);
  return row;
}


/// Runs every row and prints the tables (and JSON, plots); `rows` and `keys` are what
/// ran, for the verdict on lost requests that follows.
void run_simulate(simulate_options o, std::vector<run_row>& rows, std::vector<std::string>& keys) {
  if (!o.dataset_path.empty()) o.workload = "trace";  // the requests are the file's
  if (is_rerank(o)) {
    if (o.max_tokens > 0 || o.stop_strings) fail("--max-tokens, --stop-strings: a rerank call generates no tokens");
    if (!o.targets.empty()) fail("--target: the rerank workload's figures are per call (no TTFT or TPOT)");
    if (!o.plot_dir.empty()) fail("--plot: the rerank workload has no latency charts");
  } else if (!o.rerank_template.empty()) {
    fail("--rerank-template-tokens: only with --workload rerank");
  }
  if (o.stop_strings && o.max_tokens == 0 && o.dataset_path.empty())
    fail("--stop-strings needs --max-tokens above the outputs (a stop string ends an output before its limit)");
  deployment base = load_deployment_or_fail(o.config_path, o.overrides);
  if (!o.plugin_dir.empty()) base.scheduler.plugin_dir = o.plugin_dir;
  if (!o.prefix_caching.empty()) base.engine.enable_prefix_caching = o.prefix_caching == "on";
  const auto targets = parse_targets(o.targets);
  const auto points = parse_sweeps(o.sweeps);
  for (const auto& text : o.sweeps) keys.push_back(sweep_key(text));
  if (o.replicas < 1) fail("--replicas: at least 1");
  if (o.route_policies.empty()) o.route_policies = {base.router.policy};
  (void)parse_route_settings(o.route_settings);
  if (!o.plot_dir.empty()) {
    if (auto ok = check_gnuplot(); !ok) fail(ok.error().message);
  }
  const auto setup = make_setup(o, base);
  o.policies = expand_policies(o.policies, base.scheduler, "simulate");
  if (o.cost_model.starts_with("replay:") && (o.policies.size() != 1 || points.size() != 1 || o.replicas != 1))
    fail("--cost-model replay: one policy, one run and one replica (the recording is one engine run's steps)");
  bool show_replicas = false;
  for (const auto& point : points) {
    const int replicas = point.replicas.value_or(o.replicas);
    show_replicas = show_replicas || replicas > 1;
    // One replica needs no router: one run, whatever --route-policy lists.
    const std::vector<std::string> routes = replicas > 1 ? o.route_policies : std::vector<std::string>{"-"};
    for (const auto& route : routes) {
      for (const auto& policy : o.policies) rows.push_back(run_one(o, base, setup, policy, point, replicas, route));
    }
  }
  const auto& first = rows.front().result;
  std::printf("simulate: workload %s (%s), %zu requests, %s on %s, KV blocks %d x %d, %s\n", o.workload.c_str(),
              o.size.c_str(), first.records.size(), setup.shape.c_str(), setup.device.c_str(), setup.num_kv_blocks,
              base.engine.block_size, setup.cost->describe().c_str());
  if (is_rerank(o)) {
    print_rerank_table(rows, keys.empty() ? std::vector<std::string>{"rate"} : keys, show_replicas);
  } else {
    print_table(rows, keys.empty() ? std::vector<std::string>{"rate"} : keys, targets, show_replicas);
    if (o.spec_acceptance >= 0.0) print_speculative(rows);
  }
  if (!o.plot_dir.empty()) {
    // As bench serve draws them: latency CDFs of every run, labelled by what tells the
    // runs apart, and throughput against latency when the runs are one sweep of one
    // policy (one line through its points).
    std::vector<plot_run> runs;
    for (const auto& row : rows) {
      std::string label = o.policies.size() > 1 ? row.policy : "";
      for (std::size_t i = 0; i < keys.size(); ++i)
        label += (label.empty() ? "" : " ") + keys[i] + "=" + row.point.labels.at(i);
      if (row.replicas > 1 && o.route_policies.size() > 1) label += (label.empty() ? "" : " ") + row.route;
      runs.push_back({label.empty() ? row.policy : label, row.result.records, row.result.summary});
    }
    const bool one_series = !keys.empty() && o.policies.size() == 1 && (!show_replicas || o.route_policies.size() == 1);
    if (auto ok = render_plots(o.plot_dir, runs, one_series); !ok) fail(ok.error().message);
    std::fprintf(stderr, "plots written to %s\n", o.plot_dir.c_str());
  }
  if (o.json_path.empty()) return;
  nlohmann::json doc = {{"workload", o.workload},  {"size", o.size},          {"seed", o.seed},
                        {"shape", setup.shape},    {"gpu", setup.device},            {"cost_model", setup.cost->describe()},
                        {"num_kv_blocks", setup.num_kv_blocks}, {"block_size", base.engine.block_size}};
  doc["runs"] = nlohmann::json::array();
  for (const auto& row : rows) doc["runs"].push_back(to_json(row, keys, targets));
  write_json_file(o.json_path, doc);
}

/// The run's label in the verdict: its policy, sweep values and routing.
std::string run_label(const run_row& row, const std::vector<std::string>& keys) {
  std::string label = row.policy;
  for (std::size_t i = 0; i < keys.size(); ++i) label += " " + keys[i] + "=" + row.point.labels.at(i);
  if (row.replicas > 1) label += " " + row.route;
  return label;
}

void run_simulate_checked(simulate_options o) {
  std::vector<run_row> rows;
  std::vector<std::string> keys;
  run_simulate(o, rows, keys);
  std::vector<labelled_summary> runs;
  for (const auto& row : rows) runs.push_back({run_label(row, keys), row.result.summary});
  check_every_request_completed("simulate", runs, o.allow_failures);
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto o = std::make_shared<simulate_options>();
  auto* cmd = app.add_subcommand("simulate", "Run the real scheduler and KV manager on a virtual clock, with a "
                                             "step-cost model of a GPU (no weights, no GPU)");
  cmd->add_option("--config", o->config_path, "deployment TOML (max_num_seqs, budget, block size, policy settings)");
  cmd->add_option("--set", o->overrides, "override a deployment key (key=value), repeatable");
  cmd->add_option("--workload", o->workload,
                  "variance | latency | procurement | interference | overhead | prefix | prefix-chat | rerank")
      ->capture_default_str();
  cmd->add_option("--dataset-path", o->dataset_path,
                  "a JSONL trace instead of --workload: per line \"prompt\" (token ids) or \"input_len\", "
                  "\"output_len\", \"arrival_s\" (its arrival times unless --request-rate is given); \"max_tokens\" "
                  "above output_len (ends on its own: EOS, or a stop string with \"stop\": true), "
                  "\"cancel_after_s\"");
  cmd->add_option("--size", o->size, "small | full")->capture_default_str();
  cmd->add_option("--cap", o->cap, "variance: output length cap (default: the largest of the size)")
      ->check(positive_number());
  cmd->add_option("--num-prompts", o->num_prompts, "requests (default: the workload's own count)")
      ->check(positive_number());
  cmd->add_option("--seed", o->seed, "workload and arrival seed")->capture_default_str();
  cmd->add_option("--request-rate", o->request_rate,
                  "requests per second, Poisson (inf = the workload's own times, all at once for most)")
      ->check(positive_number(true));
  cmd->add_option("--burstiness", o->burstiness, "gamma shape of the arrival gaps (1 = Poisson)")
      ->check(positive_number())
      ->capture_default_str();
  cmd->add_option("--policy", o->policies, "policies to compare, in order; all = every policy in the plugin dir")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--plugin-dir", o->plugin_dir, "where the policy plugins are (default: as serve finds them)");
  cmd->add_option("--shape", o->shape, "model shape: " + [] {
    std::string names;
    for (const auto& n : shape_names()) names += (names.empty() ? "" : ", ") + n;
    return names;
  }() + " (default: the profile's model, or llama-3.1-8b)");
  cmd->add_option("--gpu", o->gpu, "GPU datasheet: " + [] {
    std::string names;
    for (const auto& n : bench::gpu_names()) names += (names.empty() ? "" : ", ") + n;
    return names;
  }())->capture_default_str();
  cmd->add_option("--gpu-memory", o->memory, "device memory (default: the GPU's)");
  cmd->add_option("--bandwidth", o->bandwidth, "memory bandwidth (default: the GPU's)");
  cmd->add_option("--flops", o->flops, "dense peak FLOP/s (default: the GPU's)");
  cmd->add_option("--utilization", o->utilization, "fraction of memory for weights + KV")
      ->check(positive_number() & CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--weight-dtype", o->weight_dtype, "weight type (bytes per weight)")->capture_default_str();
  cmd->add_option("--kv-dtype", o->kv_dtype, "KV cache element type: f32 | f16 | bf16")->capture_default_str();
  cmd->add_option("--num-kv-blocks", o->num_kv_blocks,
                  "KV blocks (default: what the GPU's memory holds; profile: the deployment's engine.kv_memory)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--cost-model", o->cost_model,
                  "step-cost model: roofline (of --gpu) | profile:FILE (measured by inflight bench profile) | "
                  "replay:FILE (the steps of one bench offline --record-steps run, in order)")
      ->capture_default_str();
  cmd->add_option("--bandwidth-efficiency", o->bandwidth_efficiency, "roofline: share of the bandwidth reached")
      ->check(positive_number() & CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--compute-efficiency", o->compute_efficiency, "roofline: share of the peak FLOP/s reached")
      ->check(positive_number() & CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--step-overhead-ms", o->step_overhead_ms, "roofline: fixed time added to every step")
      ->check(non_negative_number())
      ->capture_default_str();
  cmd->add_option("--engine-overhead-ms", o->engine_overhead_ms,
                  "profile: time per step outside the backend, added to the profile's (default 0.3 for a grid "
                  "profile, 0 for steps recorded in the engine); replay: the engine's time between its steps "
                  "(default 0)")
      ->check(non_negative_number());
  cmd->add_option("--spec-acceptance", o->spec_acceptance,
                  "speculative decoding: the chance that a drafted token is kept (after the ones before it); drafts "
                  "as [speculative] says (method ngram unless set), verify steps cost what the cost model says of "
                  "their rows")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--first-step-delay-ms", o->first_step_delay_ms,
                  "a cold engine's time before its first step, added to each replica's first (default 0)")
      ->check(non_negative_number())
      ->capture_default_str();
  cmd->add_option("--slo-ttft", o->slo_ttft_ms, "goodput: TTFT limit in ms (also every request's TTFT target)")
      ->check(positive_number());
  cmd->add_option("--slo-tpot", o->slo_tpot_ms, "goodput: TPOT limit in ms (also every request's TPOT target)")
      ->check(positive_number());
  cmd->add_option("--slo-e2e", o->slo_e2e_ms, "goodput: end-to-end latency limit in ms")->check(positive_number());
  cmd->add_option("--prefix-caching", o->prefix_caching, "on | off (default: the deployment's)")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--sweep", o->sweeps,
                  "one run per value: request-rate=1,2,4 | max_num_batched_tokens=256,512 | max_num_seqs=... | "
                  "replicas=1,2,4; repeatable: every combination");
  cmd->add_option("--replicas", o->replicas, "engine replicas behind a router, each with its own KV pool")
      ->capture_default_str();
  cmd->add_option("--route-policy", o->route_policies,
                  "with several replicas: round_robin | least_load | prefix (routing policies in the plugin "
                  "directory), comma-separated to compare (default: the deployment's router.policy)")
      ->delimiter(',');
  cmd->add_option("--route-setting", o->route_settings,
                  "a setting of the routing policy, key=value (repeatable), as serve --route-setting");
  cmd->add_option("--target", o->targets,
                  "a latency target each run is checked against, METRIC-pNN=MS with METRIC ttft, tpot, itl or e2e "
                  "(repeatable), e.g. --target ttft-p99=1000: a 'meets' column and the fewest replicas meeting all");
  cmd->add_option("--max-tokens", o->max_tokens,
                  "every request's limit: an output shorter than it ends on its own (EOS) at its workload length, "
                  "a longer one is cut to it (default: each output's own length, under ignore_eos)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--stop-strings", o->stop_strings,
                "outputs below their limit end by a stop string (seen after the token, one step later) instead of EOS");
  cmd->add_option("--cancel-after", o->cancel_after_s,
                  "every client cancels its request this many seconds after sending it, if it has not finished")
      ->check(non_negative_number());
  cmd->add_option("--max-concurrency", o->max_concurrency,
                  "closed-loop clients, as bench serve --max-concurrency: at most this many requests (rerank: calls) "
                  "in flight; the next is sent when one finishes (0 = open arrivals)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--admission", o->admission,
                  "the admission gate and time limits of each replica: offline (as bench offline: every request "
                  "admitted, no queue time limit, no deadline) | serve (the deployment's server.max_waiting_requests, "
                  "max_waiting_tokens, max_queue_time_s and request_timeout_s, as served clients meet them)")
      ->check(CLI::IsMember({"offline", "serve"}))
      ->capture_default_str();
  cmd->add_option("--rerank-template-tokens", o->rerank_template,
                  "rerank: tokens the template adds before the query (every call's), before a document (a "
                  "call's) and after it (default: the built-in template in the bench models' tokenizer, 83,4,29)")
      ->delimiter(',');
  cmd->add_option("--json", o->json_path, "write every request and the summaries to this file");
  cmd->add_option("--plot", o->plot_dir,
                  "render PNG charts into this folder, as bench serve does (latency CDFs; throughput against latency "
                  "for a sweep of one policy); needs gnuplot");
  add_allow_failures_flag(*cmd, o->allow_failures);
  cmd->callback([o] { run_simulate_checked(*o); });
}

}  // namespace inflight::app

// `inflight bench offline`: runs the engine in this process on a named workload, once
// per scheduling policy at the same KV memory and max_num_seqs, and prints one table.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "apps/inflight/bench_embed_command.hpp"
#include "apps/inflight/bench_engine_run.hpp"
#include "apps/inflight/bench_policies.hpp"
#include "apps/inflight/bench_rerank_command.hpp"
#include "apps/inflight/bench_report.hpp"
#include "apps/inflight/bench_structured.hpp"
#include "apps/inflight/commands.hpp"
#include "apps/inflight/host_info.hpp"
#include "config/deployment_loader.hpp"
#include "core/engine/sched/policy.hpp"
#include "core/engine/spec/spec_config.hpp"
#include "core/bench/arrival.hpp"
#include "core/bench/policy_budget.hpp"
#include "core/grammar/tokenizer_vocab.hpp"
#include "core/model/formats/shapes.hpp"
#include "core/bench/sim/step_profile.hpp"

namespace inflight::app {
namespace {

struct offline_options {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string workload = "variance";
  std::string dataset_path;  // a JSONL trace instead of a named workload (workload "trace")
  std::vector<std::string> policies = {"static", "fcfs", "splitfuse"};
  int cap = 0;
  std::string size = "small";
  std::string shape;
  int num_prompts = 0;
  std::uint64_t seed = 0;
  double request_rate = INFINITY;
  double burstiness = 1.0;
  int budget = 0;       // interference: max_num_batched_tokens of every policy (0 = longest prompt + streams)
  int chunk = 256;      // interference: splitfuse's max_chunk_tokens
  int max_concurrency = 0;  // rerank: requests in flight at once (0 = all at once)
  std::string prefix_caching;  // on | off | both ("" = the deployment's)
  std::vector<std::string> speculative;  // drafters to compare, each a run ("off" = none; {} = the deployment's)
  std::string result_json;
  bool step_feed = false;  // overhead: each row also with one step-feed reader
  std::string record_steps;  // a step profile of every step the engine ran (source "engine")
  int generations = 0;     // embed: generation requests running alongside the inputs
  int repeat = 1;          // structured: constrained / unconstrained pairs per policy
  bool allow_failures = false;  // exit 0 although a run lost requests
};


deployment base_deployment(const offline_options& o) {
  deployment d = load_deployment_or_fail(o.config_path, o.overrides);
  if (!o.shape.empty()) use_named_shape(d, o.shape);
  return d;
}

std::vector<bench::bench_prompt> offline_prompts(const offline_options& o, const loaded_model& model) {
  const int vocab_size = model.weights->config.vocab_size;
  auto size = bench::parse_workload_size(o.size);
  if (!size) fail(size.error().message);
  std::mt19937_64 rng(o.seed);
  bench::workload_options w{o.workload, *size, o.cap, o.num_prompts, vocab_size};
  auto prompts = o.dataset_path.empty()
                     ? bench::workload_dataset(w, rng)
                     : bench::load_trace(o.dataset_path, o.num_prompts, vocab_size, bench::prompt_format::ids, true, rng);
  if (!prompts) fail(prompts.error().message);
  for (auto& p : *prompts) {  // text prompts (copy): the model's tokens
    if (!p.prompt_ids.empty() || p.prompt_text.empty()) continue;
    p.prompt_ids = model.tok->encode(p.prompt_text, model.tok->adds_bos());
    p.input_len = int(p.prompt_ids.size());
  }
  // Workloads without their own schedule (latency, procurement) use the arrival process.
  auto times = bench::arrival_times(int(prompts->size()), {o.request_rate, o.burstiness}, rng);
  if (!times) fail(times.error().message);
  for (std::size_t i = 0; i < prompts->size(); ++i) {
    if ((*prompts)[i].arrival_s < 0) (*prompts)[i].arrival_s = (*times)[i];
  }
  std::stable_sort(prompts->begin(), prompts->end(), [](const auto& a, const auto& b) { return a.arrival_s < b.arrival_s; });
  return std::move(*prompts);
}

/// The deployment of one policy. Every policy keeps the KV memory and max_num_seqs;
/// the token budget differs only where a policy cannot chunk (see docs/benchmarks.md).
deployment policy_deployment(const deployment& base, const std::string& policy, const offline_options& o,
                             const std::vector<bench::bench_prompt>& prompts) {
  deployment d = base;
  d.scheduler.policy = policy;
  // Every request is admitted and runs to its end, however long it waits: no
  // waiting-request or waiting-token bound, no queue time limit, no deadline.
  const auto room = bench::offline_admission(prompts);
  d.server.max_waiting_requests = std::max(d.server.max_waiting_requests, room.max_requests);
  d.server.max_waiting_tokens = std::max(d.server.max_waiting_tokens, room.max_tokens);
  d.server.max_queue_time_s = 0.0;
  d.server.request_timeout_s = 0.0;
  if (o.workload == "interference") {
    d.engine.max_num_batched_tokens = o.budget > 0 ? o.budget : bench::interference_budget(prompts);
    if (policy == "splitfuse") d.scheduler.policy_settings["splitfuse"] = "{\"max_chunk_tokens\": " + std::to_string(o.chunk) + "}";
  } else {
    d.engine.max_num_batched_tokens =
        bench::offline_budget(policy, d.engine.max_num_batched_tokens, d.engine.max_num_seqs, prompts);
  }
  return d;
}

struct policy_result {
  std::string policy;
  std::string caching;  // "on" / "off" when --prefix-caching chose it, else ""
  std::string spec;     // the drafter when --speculative chose it, else ""
  int budget = 0;
  engine_run run;
  bench::bench_summary summary;
};

std::string label(const policy_result& r) {
  std::string out = r.caching.empty() ? r.policy : r.policy + "/" + r.caching;
  return r.spec.empty() ? out : out + "/" + r.spec;
}

double per_step_ms(double seconds, std::uint64_t steps) { return steps ? seconds * 1e3 / double(steps) : 0.0; }

double pct(const bench::metric_stats& m, double p) {
  for (const auto& [q, v] : m.percentiles) if (q == p) return v;
  return 0.0;
}

void print_table(const std::vector<policy_result>& results) {
  std::printf("%-13s %7s %5s %5s %5s %5s %5s %9s %7s %8s %8s %8s %8s %8s %8s %6s %5s %6s %8s %8s %7s\n", "policy",
              "budget", "done", "refsd", "t/o", "shed", "fail", "out tok/s", "req/s", "E2E p50", "E2E p90", "E2E p99", "TTFT p50", "TTFT p90", "TTFT p99", "batch", "KV%", "preempt",
              "step ms", "outside", "x static");
  double static_tps = 0.0;
  for (const auto& r : results) {
    if (r.policy == "static" && static_tps == 0.0) static_tps = r.summary.output_throughput;
  }
  for (const auto& r : results) {
    const auto& s = r.summary;
    const auto& snap = r.run.snapshot;
    const double steps = double(std::max<std::uint64_t>(1, snap.num_steps));
    char ratio[16] = "-";
    if (static_tps > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", s.output_throughput / static_tps);
    std::printf(
        "%-13s %7d %5d %5d %5d %5d %5d %9.1f %7.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %6.1f %5.1f %6llu %8.2f %8.3f "
        "%7s\n",
        label(r).c_str(), r.budget, s.num_completed, s.num_refused, s.num_timed_out, s.num_shed,
        s.num_cancelled + s.num_other_failed(), s.output_throughput, s.request_throughput, pct(s.e2el_ms, 50) / 1e3,
                pct(s.e2el_ms, 90) / 1e3, pct(s.e2el_ms, 99) / 1e3, pct(s.ttft_ms, 50) / 1e3, pct(s.ttft_ms, 90) / 1e3,
                pct(s.ttft_ms, 99) / 1e3, snap.batch_size_sum / steps, 100.0 * snap.kv_usage_sum / steps,
                (unsigned long long)snap.gauges.num_preemptions, per_step_ms(snap.engine_seconds, snap.num_steps),
                per_step_ms(snap.engine_seconds - snap.backend_seconds, snap.num_steps), ratio);
  }
  std::printf("(done = requests completed; refsd = refused (429 / 503); t/o = timed out; shed = shed by the policy; "
              "fail = any other failure; out tok/s, req/s, E2E and TTFT count completed requests only; "
              "E2E and TTFT in seconds; batch = mean sequences per step; KV%% = mean KV usage; step ms = engine time "
              "per step; outside = ms of it outside the backend)\n");
}

bench::metric_stats tagged(const engine_run& run, const std::string& tag, bool itl) {
  std::vector<double> values;
  for (const auto& r : run.records) {
    if (r.tag != tag || !r.is_success) continue;
    if (itl) for (double g : r.itl_s) values.push_back(g * 1e3);
    else values.push_back(r.ttft_s * 1e3);
  }
  return bench::describe(std::move(values), {50, 99});
}

void print_interference(const std::vector<policy_result>& results, int chunk) {
  std::printf("\ninterference: decode-stream ITL and long-prompt TTFT (ms); splitfuse chunks prompts to %d tokens\n", chunk);
  std::printf("%-13s %7s %10s %10s %10s %12s %12s %12s\n", "policy", "budget", "ITL p50", "ITL p99", "ITL max",
              "TTFT p50", "TTFT p99", "TTFT max");
  for (const auto& r : results) {
    const auto itl = tagged(r.run, "decode", true), ttft = tagged(r.run, "long", false);
    std::printf("%-13s %7d %10.2f %10.2f %10.2f %12.1f %12.1f %12.1f\n", r.policy.c_str(), r.budget, pct(itl, 50),
                pct(itl, 99), itl.max, pct(ttft, 50), pct(ttft, 99), ttft.max);
  }
}

/// Prefix caching on against off: TTFT, throughput and hit rate per run, and for each
/// policy run both ways the ratios off / on (TTFT) and on / off (throughput).
/// --speculative: acceptance and speed of each drafter beside the run without one.
void print_speculative(const std::vector<policy_result>& results) {
  std::printf("\nspeculative decoding (tok/s x = against the same policy with speculation off)\n");
  std::printf("%-22s %10s %8s %10s %8s %9s %9s %11s %8s\n", "policy/drafter", "out tok/s", "x off", "TPOT p50",
              "steps", "drafted", "kept", "acceptance", "mean len");
  for (const auto& r : results) {
    double off = 0.0;
    for (const auto& o : results)
      if (o.policy == r.policy && o.caching == r.caching && o.spec == "off") off = o.summary.output_throughput;
    const auto& g = r.run.snapshot.gauges;
    const auto f = bench::spec_figures_of(g.num_drafts, g.num_draft_tokens, g.num_accepted_tokens);
    char ratio[16] = "-";
    if (off > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", r.summary.output_throughput / off);
    std::printf("%-22s %10.1f %8s %10.3f %8llu %9llu %9llu %10.1f%% %8.2f\n", label(r).c_str(),
                r.summary.output_throughput, ratio, pct(r.summary.tpot_ms, 50), (unsigned long long)r.run.snapshot.num_steps,
                (unsigned long long)g.num_draft_tokens, (unsigned long long)g.num_accepted_tokens, 100.0 * f.acceptance,
                f.mean_length);
  }
  std::printf("(acceptance = kept / drafted tokens; mean len = tokens per checked draft, the kept ones + 1; "
              "TPOT in ms)\n");
}

void print_prefix_caching(const std::vector<policy_result>& results) {
  std::printf("\nprefix caching (TTFT in ms; hit = prompt tokens taken from the cache)\n");
  std::printf("%-17s %10s %10s %10s %8s %7s %12s %12s\n", "policy/caching", "TTFT p50", "TTFT p99", "out tok/s",
              "req/s", "hit%", "TTFT p50 x", "tok/s x");
  for (const auto& r : results) {
    const auto& s = r.summary;
    std::string ttft_x = "-", tps_x = "-";
    for (const auto& off : results) {
      if (r.caching != "on" || off.policy != r.policy || off.caching != "off") continue;
      const double on_p50 = pct(s.ttft_ms, 50), off_tps = off.summary.output_throughput;
      if (on_p50 > 0) ttft_x = std::to_string(pct(off.summary.ttft_ms, 50) / on_p50).substr(0, 5) + "x";
      if (off_tps > 0) tps_x = std::to_string(s.output_throughput / off_tps).substr(0, 5) + "x";
    }
    std::printf("%-17s %10.1f %10.1f %10.1f %8.2f %7.1f %12s %12s\n", label(r).c_str(), pct(s.ttft_ms, 50),
                pct(s.ttft_ms, 99), s.output_throughput, s.request_throughput, 100.0 * s.prefix_cache_hit_rate(),
                ttft_x.c_str(), tps_x.c_str());
  }
  std::printf("(TTFT p50 x = off / on, lower with caching is > 1; tok/s x = on / off)\n");
}

policy_result run_policy(const deployment& d, const loaded_model& model, const std::string& policy,
                         const std::vector<bench::bench_prompt>& prompts, step_watch watch = step_watch::none,
                         const std::vector<std::shared_ptr<const token_index>>& grammars = {}) {
  std::fprintf(stderr, "bench offline: %s, %zu requests, budget %d, max_num_seqs %d, prefix caching %s%s...\n",
               policy.c_str(), prompts.size(), d.engine.max_num_batched_tokens, d.engine.max_num_seqs,
               d.engine.enable_prefix_caching ? "on" : "off",
               watch == step_watch::feed ? ", step feed read" : watch == step_watch::record ? ", steps recorded" : "");
  auto run = run_engine_workload(d, model, prompts, watch, grammars);
  if (!run) fail(policy + ": " + run.error().message);
  policy_result r{policy, {}, {}, d.engine.max_num_batched_tokens, std::move(*run), {}};
  r.summary = bench::summarize(r.run.records, r.run.duration_s, {50, 90, 99}, {});
  // Lost requests are counted in the tables, said after them, and set the exit status.
  if (const auto line = failure_line(r.summary); !line.empty())
    std::fprintf(stderr, "bench offline: %s: %s\n", policy.c_str(), line.c_str());
  return r;
}

/// Engine time per step outside and inside the backend at 1 and at N concurrent sequences;
/// with --step-feed each row runs twice, without and with one step-feed reader.
std::vector<labelled_summary> run_overhead(const offline_options& o, const deployment& base, const loaded_model& model,
                                           const std::vector<bench::bench_prompt>& prompts) {
  std::vector<labelled_summary> ran;
  std::printf("%-13s %6s %5s %8s %12s %12s %12s %9s %10s\n", "policy", "seqs", "feed", "steps", "step ms",
              "backend ms", "outside ms", "outside%", "feed B/step");
  std::vector<bool> feeds = {false};
  if (o.step_feed) feeds.push_back(true);
  for (const auto& policy : o.policies) {
    for (std::size_t n : {std::size_t(1), prompts.size()}) {
      const std::vector<bench::bench_prompt> part(prompts.begin(), prompts.begin() + std::ptrdiff_t(n));
      for (const bool feed : feeds) {
        const auto r = run_policy(policy_deployment(base, policy, o, part), model, policy, part,
                                  feed ? step_watch::feed : step_watch::none);
        ran.push_back({policy + " x" + std::to_string(n), r.summary});
        const auto& s = r.run.snapshot;
        const double outside = s.engine_seconds - s.backend_seconds;
        std::printf("%-13s %6zu %5s %8llu %12.3f %12.3f %12.3f %8.1f%% %10.0f\n", policy.c_str(), n,
                    feed ? "on" : "off", (unsigned long long)s.num_steps, per_step_ms(s.engine_seconds, s.num_steps),
                    per_step_ms(s.backend_seconds, s.num_steps), per_step_ms(outside, s.num_steps),
                    s.engine_seconds > 0 ? 100.0 * outside / s.engine_seconds : 0.0,
                    s.num_steps > 0 ? double(r.run.num_feed_bytes) / double(s.num_steps) : 0.0);
      }
    }
  }
  return ran;
}

/// The structured workload: per policy, a constrained run, then the same prompts
/// unconstrained with the lengths the constrained run produced.
std::vector<labelled_summary> run_structured(const offline_options& o, const deployment& base,
                                             const loaded_model& model, const std::vector<bench::bench_prompt>& prompts) {
  std::vector<labelled_summary> ran;
  auto compiled = compile_prompt_schemas(prompts, make_grammar_vocab(*model.tok), 5);
  if (!compiled) fail(compiled.error().message);
  std::vector<structured_pair> pairs;
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& policy : o.policies) {
    const auto d = policy_deployment(base, policy, o, prompts);
    for (int rep = 0; rep < o.repeat; ++rep) {  // pairs back to back: both halves see the same machine load
      auto constrained = run_policy(d, model, policy, prompts, step_watch::none, compiled->per_prompt);
      const auto plain_prompts = matched_unconstrained(prompts, constrained.run.records);
      auto plain = run_policy(d, model, policy, plain_prompts);
      ran.push_back({policy + " constrained", constrained.summary});
      ran.push_back({policy + " unconstrained", plain.summary});
      const std::string label = o.repeat > 1 ? policy + "#" + std::to_string(rep + 1) : policy;
      structured_pair p{label, constrained.summary, plain.summary, check_outputs(constrained.run.records, false),
                        constrained.run.mask_seconds};
      pairs.push_back(p);
      runs.push_back(to_json(p));
    }
  }
  const std::vector<double> ps = {50, 99};
  const auto compile = bench::describe(compiled->compile_s, ps), index = bench::describe(compiled->index_build_s, ps);
  std::printf("workload structured (%s%s), %zu requests, %zu JSON Schemas in rotation, model %s, vocabulary %d\n",
              o.size.c_str(), o.cap ? (", cap " + std::to_string(o.cap)).c_str() : "", prompts.size(),
              compiled->index_build_s.size(), model.name.c_str(), model.tok->vocab_size());
  std::printf("compile (cold, schema to grammar, 5 per schema): p50 %.3f ms, p99 %.3f ms; token index build: mean "
              "%.1f ms, max %.1f ms per schema\n",
              pct(compile, 50) * 1e3, pct(compile, 99) * 1e3, index.mean * 1e3, index.max * 1e3);
  print_structured_table(stdout, pairs);
  if (o.repeat > 1) print_median_ratios(stdout, pairs, o.repeat);
  if (!o.result_json.empty()) {
    write_json_file(o.result_json, {{"workload", o.workload}, {"size", o.size}, {"cap", o.cap}, {"seed", o.seed},
                                    {"compile_s", to_json(compile)}, {"index_build_s", to_json(index)}, {"runs", runs}});
  }
  return ran;
}

/// --record-steps: every step of every run as a step profile (source "engine"), fitted as
/// `bench profile` fits its grid.
void write_recorded_steps(const offline_options& o, const deployment& d, const loaded_model& model,
                          std::vector<sim::profile_sample> steps) {
  sim::step_profile profile;
  auto& origin = profile.origin;
  origin.source = "engine";
  origin.model = o.shape.empty() ? model.name : o.shape;
  origin.device = d.engine.backend == "cpu" ? "cpu: " + cpu_model_name() : d.engine.backend;
  origin.backend = d.engine.backend + " (steps recorded in the engine: " + o.workload + ")";
  origin.threads = d.engine.threads;
  origin.weight_dtype = weight_dtype_list(*model.weights);
  origin.kv_dtype = kv_dtype_of(d);
  origin.measured_at = utc_now();
  origin.repeats = 1;
  profile.samples = std::move(steps);
  // A workload's steps need not vary every kind of work apart: what they do not
  // determine is held at 0 (and named); merging recordings (bench profile --refit) fits it.
  auto fit = sim::fit_profile(profile.samples, {64, 256}, /*pin_undetermined=*/true);
  if (!fit) fail("--record-steps: " + fit.error().message);
  for (const auto& name : fit->pinned)
    std::fprintf(stderr, "bench offline: --record-steps: held at 0: %s\n", name.c_str());
  profile.fit = *fit;
  std::ofstream out(o.record_steps, std::ios::binary);
  if (!out || !(out << sim::to_json_text(profile))) fail("cannot write " + o.record_steps);
  std::fprintf(stderr, "bench offline: %zu steps recorded in %s (fit error mean %.1f%%, max %.1f%%)\n",
               profile.samples.size(), o.record_steps.c_str(), 100.0 * fit->mean_relative_error,
               100.0 * fit->max_relative_error);
}

/// --prefix-caching: the settings to run each policy with ({} = the deployment's).
std::vector<bool> parse_prefix_caching(const std::string& v) {
  if (v == "both") return {true, false};
  if (v.empty()) return {};
  return {v == "on"};
}

/// Runs the workload and prints its tables; the summaries of the runs, for the verdict
/// on lost requests (rerank and embed fail on any failed input themselves).
std::vector<labelled_summary> run_offline(offline_options o) {
  if (!o.dataset_path.empty()) o.workload = "trace";  // the requests are the file's
  const auto base = base_deployment(o);
  o.policies = expand_policies(o.policies, base.scheduler, "bench offline");
  auto model = load_model(base.model, base.engine.backend);
  if (!model) fail(model.error().message);
  std::fprintf(stderr, "model: %s\n", model->description.c_str());
  if (o.workload == "rerank") {
    run_rerank_bench({o.policies, o.size, o.num_prompts, o.seed, o.max_concurrency,
                      parse_prefix_caching(o.prefix_caching), o.result_json}, base, *model);
    return {};
  }
  if (o.workload == "embed") {
    run_embed_bench({o.policies, o.size, o.num_prompts, o.seed, parse_prefix_caching(o.prefix_caching),
                     o.result_json, o.generations}, base, *model);
    return {};
  }
  const auto prompts = offline_prompts(o, *model);
  if (!o.record_steps.empty() && (o.workload == "overhead" || o.workload == "structured" || o.step_feed))
    fail("--record-steps: not with the overhead or structured workloads, nor with --step-feed");
  if (o.workload == "overhead") return run_overhead(o, base, *model, prompts);
  if (o.workload == "structured") return run_structured(o, base, *model, prompts);
  const auto watch = o.record_steps.empty() ? step_watch::none : step_watch::record;
  std::vector<sim::profile_sample> recorded;
  std::vector<std::string> modes = {""};
  if (o.prefix_caching == "both") modes = {"off", "on"};
  else if (!o.prefix_caching.empty()) modes = {o.prefix_caching};
  const std::vector<std::string> drafters = o.speculative.empty() ? std::vector<std::string>{""} : o.speculative;
  std::vector<policy_result> results;
  for (const auto& policy : o.policies) {
    for (const auto& mode : modes) {  // off and on back to back, so both see the same machine load
      for (const auto& drafter : drafters) {
        auto d = policy_deployment(base, policy, o, prompts);
        if (!mode.empty()) d.engine.enable_prefix_caching = mode == "on";
        if (!drafter.empty()) d.speculative.method = drafter;
        results.push_back(run_policy(d, *model, policy, prompts, watch));
        results.back().caching = mode;
        results.back().spec = drafter;
        auto& steps = results.back().run.steps;
        recorded.insert(recorded.end(), std::make_move_iterator(steps.begin()), std::make_move_iterator(steps.end()));
        steps.clear();
      }
    }
  }
  std::printf("workload %s (%s%s), %zu requests, model %s, KV blocks %d, max_num_seqs %d\n", o.workload.c_str(),
              o.size.c_str(), o.cap ? (", cap " + std::to_string(o.cap)).c_str() : "", prompts.size(),
              model->name.c_str(), results.front().run.snapshot.num_blocks, base.engine.max_num_seqs);
  print_table(results);
  if (!o.record_steps.empty()) write_recorded_steps(o, base, *model, std::move(recorded));
  if (o.workload == "interference") print_interference(results, o.chunk);
  if (!o.prefix_caching.empty() || o.workload.starts_with("prefix")) print_prefix_caching(results);
  if (!o.speculative.empty()) print_speculative(results);
  std::vector<labelled_summary> ran;
  for (const auto& r : results) ran.push_back({label(r), r.summary});
  if (o.result_json.empty()) return ran;
  nlohmann::json doc = {{"workload", o.workload}, {"size", o.size}, {"cap", o.cap}, {"seed", o.seed}};
  for (const auto& r : results) {
    nlohmann::json records = nlohmann::json::array();
    for (const auto& rec : r.run.records) records.push_back(to_json(rec));
    const auto& s = r.run.snapshot;
    doc["policies"][label(r)] = {{"budget", r.budget},           {"summary", to_json(r.summary)},
                                 {"num_steps", s.num_steps},     {"engine_seconds", s.engine_seconds},
                                 {"backend_seconds", s.backend_seconds}, {"batch_size_sum", s.batch_size_sum},
                                 {"kv_usage_sum", s.kv_usage_sum}, {"preemptions", s.gauges.num_preemptions},
                                 {"spec_decode", {{"drafts", s.gauges.num_drafts},
                                                  {"draft_tokens", s.gauges.num_draft_tokens},
                                                  {"accepted_tokens", s.gauges.num_accepted_tokens}}},
                                 {"requests", std::move(records)}};
  }
  write_json_file(o.result_json, doc);
  return ran;
}

}  // namespace

void add_bench_offline_command(CLI::App& bench) {
  auto o = std::make_shared<offline_options>();
  auto* cmd = bench.add_subcommand("offline", "Run the engine in-process on a workload, once per policy");
  cmd->add_option("--config", o->config_path, "deployment TOML (KV memory, max_num_seqs, threads)");
  cmd->add_option("--set", o->overrides, "override a deployment key (key=value), repeatable");
  cmd->add_option("--workload", o->workload,
                  "variance | latency | procurement | interference | overhead | prefix | prefix-chat | structured | copy | "
                  "rerank | embed")
      ->capture_default_str();
  cmd->add_option("--dataset-path", o->dataset_path,
                  "a JSONL trace instead of --workload: per line \"prompt\" (token ids) or \"input_len\", "
                  "\"output_len\", \"arrival_s\" (docs/benchmarks.md)");
  cmd->add_option("--policy", o->policies, "policies to compare, in order; all = every policy in the plugin dir")->delimiter(',')->capture_default_str();
  cmd->add_option("--cap", o->cap, "variance, structured: output length cap (default: the largest of the size)")
      ->check(positive_number());
  cmd->add_option("--size", o->size, "small | full")->capture_default_str();
  cmd->add_option("--shape", o->shape, "random weights of a named shape (bench-20M, bench-110M, ...)");
  cmd->add_option("--num-prompts", o->num_prompts, "requests (default: the workload's own count)")
      ->check(positive_number());
  cmd->add_option("--seed", o->seed, "workload seed")->capture_default_str();
  cmd->add_option("--request-rate", o->request_rate, "latency / procurement: requests per second (inf = all at once)")
      ->check(positive_number(true));
  cmd->add_option("--burstiness", o->burstiness, "gamma shape of the arrival gaps (1 = Poisson)")
      ->check(positive_number())
      ->capture_default_str();
  cmd->add_option("--budget", o->budget, "interference: token budget of every policy (default: longest prompt + streams)")
      ->check(positive_number());
  cmd->add_option("--chunk", o->chunk, "interference: splitfuse's max_chunk_tokens")
      ->check(positive_number())
      ->capture_default_str();
  cmd->add_option("--max-concurrency", o->max_concurrency, "rerank: requests in flight at once (0 = all at once)")
      ->check(non_negative_number())
      ->capture_default_str();
  cmd->add_option("--generations", o->generations,
                  "embed: this many generation requests (128 tokens each) run alongside the inputs")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--repeat", o->repeat, "structured: constrained / unconstrained pairs per policy (the median ratio is printed)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--step-feed", o->step_feed, "overhead: also run each row with one reader of the step feed");
  cmd->add_option("--record-steps", o->record_steps,
                  "write every step the engine ran (shape, time from plan to applied result) as a step profile for "
                  "inflight simulate --cost-model profile:FILE (merge several with bench profile --refit A,B)");
  cmd->add_option("--prefix-caching", o->prefix_caching,
                  "on | off | both (each policy with caching off, then on; rerank: on, then off; "
                  "default: the deployment's)")
      ->check(CLI::IsMember({"on", "off", "both"}));
  cmd->add_option("--speculative", o->speculative,
                  "speculative decoding: drafters to compare, each a run of every policy (off, ngram, suffix, draft "
                  "(speculative.draft_model), a drafter plugin's name; "
                  "default: the deployment's [speculative])")
      ->delimiter(',')
      ->check([](const std::string& m) {
        return is_speculative_method_name(m) ? std::string() : "not a speculative method: " + m;
      });
  cmd->add_option("--result-json", o->result_json, "write every request and the summaries to this file");
  add_allow_failures_flag(*cmd, o->allow_failures);
  cmd->callback([o] { check_every_request_completed("bench offline", run_offline(*o), o->allow_failures); });
}

}  // namespace inflight::app

#include "apps/inflight/bench_rerank_command.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "apps/inflight/bench_report.hpp"
#include "apps/inflight/bench_rerank_run.hpp"
#include "apps/inflight/commands.hpp"
#include "core/bench/policy_budget.hpp"

namespace inflight::app {
namespace {

struct policy_rerank {
  std::string policy;
  int budget = 0;
  bool is_caching = true;
  rerank_run run;
  bench::metric_stats latency_ms;
};

int longest_prompt(const reranker& r, const std::vector<bench::rerank_case>& cases) {
  int longest = 0;
  for (const auto& c : cases) {
    const auto prefix = r.encode_prefix(c.query);
    for (const auto& doc : c.documents) longest = std::max(longest, int(r.encode(prefix, c.query, doc).tokens.size()));
  }
  return longest;
}

deployment rerank_deployment(const deployment& base, const std::string& policy, bool is_caching, int num_documents,
                             int longest) {
  deployment d = base;
  d.scheduler.policy = policy;
  d.engine.enable_prefix_caching = is_caching;
  d.server.max_waiting_requests = std::max(d.server.max_waiting_requests, num_documents + 1);
  // As for every offline workload (and simulate): a policy that prefills prompts whole
  // gets room for a full batch of them in one step.
  d.engine.max_num_batched_tokens =
      bench::offline_budget(policy, d.engine.max_num_batched_tokens, d.engine.max_num_seqs, num_documents, longest);
  return d;
}

double pct(const bench::metric_stats& m, double p) {
  for (const auto& [q, v] : m.percentiles) if (q == p) return v;
  return 0.0;
}

/// Largest |score difference| between two runs of the same documents.
double max_score_difference(const rerank_run& a, const rerank_run& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.scores.size(); ++i)
    for (std::size_t j = 0; j < a.scores[i].size(); ++j) worst = std::max(worst, std::abs(a.scores[i][j] - b.scores[i][j]));
  return worst;
}

void print_table(const std::vector<policy_rerank>& results) {
  std::printf("%-10s %5s %7s %8s %10s %7s %7s %9s %9s %9s %6s %6s %9s\n", "policy", "cache", "budget", "docs/s",
              "prompt t/s", "cached", "req/s", "lat p50", "lat p99", "lat max", "batch", "steps", "max |ds|");
  for (const auto& r : results) {
    const auto& s = r.run.snapshot;
    const double d = std::max(1e-9, r.run.duration_s), steps = double(std::max<std::uint64_t>(1, s.num_steps));
    const double cached = double(r.run.num_cached_tokens) / double(std::max(1LL, r.run.num_prompt_tokens));
    std::printf("%-10s %5s %7d %8.1f %10.0f %6.1f%% %7.2f %9.3f %9.3f %9.3f %6.1f %6llu %9.2g\n", r.policy.c_str(),
                r.is_caching ? "on" : "off", r.budget, r.run.num_documents / d, double(r.run.num_prompt_tokens) / d,
                100.0 * cached, double(r.run.latency_s.size()) / d,
                pct(r.latency_ms, 50) / 1e3, pct(r.latency_ms, 99) / 1e3, r.latency_ms.max / 1e3,
                s.batch_size_sum / steps, (unsigned long long)s.num_steps,
                max_score_difference(results.front().run, r.run));
  }
  std::printf("(latency per request in seconds, submission of its documents to the last score; cache = prefix "
              "caching; cached = prompt tokens taken from the prefix cache; batch = mean sequences per step; "
              "max |ds| = largest score difference from the first run)\n");
}

nlohmann::json to_json(const policy_rerank& r) {
  const auto& s = r.run.snapshot;
  return {{"policy", r.policy},
          {"budget", r.budget},
          {"prefix_caching", r.is_caching},
          {"duration_s", r.run.duration_s},
          {"num_documents", r.run.num_documents},
          {"num_prompt_tokens", r.run.num_prompt_tokens},
          {"num_cached_tokens", r.run.num_cached_tokens},
          {"documents_per_s", r.run.num_documents / std::max(1e-9, r.run.duration_s)},
          {"latency_ms", app::to_json(r.latency_ms)},
          {"num_steps", s.num_steps},
          {"engine_seconds", s.engine_seconds},
          {"backend_seconds", s.backend_seconds},
          {"scores", r.run.scores}};
}

policy_rerank run_one(const deployment& d, const std::string& policy, bool is_caching, const loaded_model& model,
                      const reranker& rerank, const std::vector<bench::rerank_case>& cases, int max_concurrency) {
  const std::string name = policy + (is_caching ? "" : " (prefix caching off)");
  auto run = run_rerank_workload(d, model, rerank, cases, max_concurrency);
  if (!run) fail(name + ": " + run.error().message);
  if (run->num_failed > 0) fail(name + ": " + std::to_string(run->num_failed) + " documents failed: " + run->first_error);
  std::vector<double> ms;
  for (const double s : run->latency_s) ms.push_back(s * 1e3);
  return {policy, d.engine.max_num_batched_tokens, is_caching, std::move(*run), bench::describe(ms, {50, 99})};
}

}  // namespace

void run_rerank_bench(const rerank_bench_options& o, const deployment& base, const loaded_model& model) {
  auto rerank = reranker::try_create(base.rerank, model.tok);
  if (!rerank) fail("rerank workload: " + rerank.error().message);
  auto size = bench::parse_workload_size(o.size);
  if (!size) fail(size.error().message);
  std::mt19937_64 rng(o.seed);
  auto cases = bench::rerank_workload(*size, o.num_requests, *model.tok, rng);
  if (!cases) fail(cases.error().message);
  int num_documents = 0;
  for (const auto& c : *cases) num_documents += int(c.documents.size());
  const int longest = longest_prompt(*rerank, *cases);
  const auto caching = o.prefix_caching.empty() ? std::vector<bool>{base.engine.enable_prefix_caching} : o.prefix_caching;
  std::vector<policy_rerank> results;
  for (const auto& policy : o.policies) {
    for (const bool is_caching : caching) {
      const auto d = rerank_deployment(base, policy, is_caching, num_documents, longest);
      std::fprintf(stderr, "bench offline rerank: %s, prefix caching %s, %zu requests of %zu documents, budget %d...\n",
                   policy.c_str(), is_caching ? "on" : "off", cases->size(), cases->front().documents.size(),
                   d.engine.max_num_batched_tokens);
      results.push_back(run_one(d, policy, is_caching, model, *rerank, *cases, o.max_concurrency));
    }
  }
  std::printf("workload rerank (%s), %zu requests x %zu documents, longest prompt %d tokens, model %s, "
              "max_num_seqs %d, %s\n", o.size.c_str(), cases->size(), cases->front().documents.size(), longest,
              model.name.c_str(), base.engine.max_num_seqs,
              o.max_concurrency > 0 ? ("max concurrency " + std::to_string(o.max_concurrency)).c_str()
                                    : "all requests at once");
  print_table(results);
  if (o.result_json.empty()) return;
  nlohmann::json doc = {{"workload", "rerank"}, {"size", o.size}, {"seed", o.seed}, {"max_concurrency", o.max_concurrency}};
  for (const auto& r : results) doc["runs"].push_back(to_json(r));
  write_json_file(o.result_json, doc);
}

}  // namespace inflight::app

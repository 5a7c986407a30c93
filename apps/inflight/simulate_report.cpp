#include "apps/inflight/simulate_report.hpp"

#include <algorithm>
#include <cstdio>

#include "apps/inflight/bench_report.hpp"

namespace inflight::app {

rerank_calls summarize_calls(const sim::sim_result& r, const std::vector<bench::bench_prompt>& prompts,
                             const std::vector<double>& percentiles) {
  rerank_calls out;
  const int num_calls = prompts.empty() ? 0 : prompts.back().group + 1;
  std::vector<double> start(std::size_t(num_calls), INFINITY), end(std::size_t(num_calls), 0.0);
  std::vector<bool> failed(std::size_t(num_calls), false);
  for (const auto& rec : r.records) {
    const auto call = std::size_t(prompts[std::size_t(rec.index)].group);
    ++out.num_documents;
    out.num_prompt_tokens += rec.prompt_tokens;
    out.num_cached_tokens += rec.cached_tokens;
    start[call] = std::min(start[call], rec.start_s);
    end[call] = std::max(end[call], rec.start_s + rec.e2el_s);
    if (!rec.is_success) failed[call] = true;
  }
  std::vector<double> ms;
  for (std::size_t c = 0; c < std::size_t(num_calls); ++c) {
    out.latency_s.push_back(failed[c] ? -1.0 : end[c] - start[c]);
    if (failed[c]) {
      ++out.num_failed_calls;
    } else {
      ms.push_back((end[c] - start[c]) * 1e3);
    }
  }
  out.num_calls = num_calls;
  if (!ms.empty()) out.latency_ms = bench::describe(std::move(ms), percentiles);
  return out;
}

double pct(const bench::metric_stats& m, double p) {
  for (const auto& [q, v] : m.percentiles) {
    if (q == p) return v;
  }
  return 0.0;
}

/// Whether a run meets every --target.
bool meets(const run_row& row, const std::vector<latency_target>& targets) {
  const auto& s = row.result.summary;
  if (s.num_completed == 0) return false;
  for (const auto& t : targets) {
    if (pct(s.*(t.metric), t.percentile) > t.limit_ms) return false;
  }
  return true;
}

namespace {

/// The columns every table starts with: the policy, the sweep values, and with
/// `show_route` the replicas (unless a sweep column shows them) and the routing policy.
class row_head {
 public:
  row_head(const std::vector<std::string>& keys, bool show_route)
      : keys_(keys), show_route_(show_route),
        show_replicas_(show_route && std::find(keys.begin(), keys.end(), "replicas") == keys.end()) {
    for (const auto& k : keys) widths_.push_back(std::max(7, int(k.size())));
  }
  void print_names() const {
    std::printf("%-13s", "policy");
    for (std::size_t i = 0; i < keys_.size(); ++i) std::printf(" %*s", widths_[i], keys_[i].c_str());
    if (show_replicas_) std::printf(" %8s", "replicas");
    if (show_route_) std::printf(" %-12s", "route");
  }
  void print(const run_row& row) const {
    std::printf("%-13s", row.policy.c_str());
    for (std::size_t i = 0; i < keys_.size(); ++i) std::printf(" %*s", widths_[i], row.point.labels.at(i).c_str());
    if (show_replicas_) std::printf(" %8d", row.replicas);
    if (show_route_) std::printf(" %-12s", row.route.c_str());
  }

 private:
  const std::vector<std::string>& keys_;
  bool show_route_, show_replicas_;
  std::vector<int> widths_;
};

}  // namespace

void print_speculative(const std::vector<run_row>& rows) {
  std::printf("\nspeculative decoding\n");
  for (const auto& row : rows) {
    const auto& c = row.result.counters;
    const auto f = bench::spec_figures_of(c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens);
    std::printf("  %s: %llu drafted tokens checked in %llu drafts, %llu kept (%.1f%%), %.2f tokens per check\n",
                row.policy.c_str(), (unsigned long long)c.num_draft_tokens, (unsigned long long)c.num_drafts,
                (unsigned long long)c.num_accepted_tokens, 100.0 * f.acceptance, f.mean_length);
  }
}

void print_table(const std::vector<run_row>& rows, const std::vector<std::string>& keys,
                 const std::vector<latency_target>& targets, bool show_route) {
  const row_head head(keys, show_route);
  head.print_names();
  std::printf(" %6s %6s %7s %7s %5s %6s %6s %7s %9s %7s %24s %24s %24s %24s %6s %5s %7s %5s", "budget", "done",
              "refused", "timeout", "shed", "cancel", "failed", "req/s",
              "out tok/s", "good/s", "TTFT p50/p90/p99", "TPOT p50/p90/p99", "ITL p50/p90/p99", "E2E p50/p90/p99",
              "batch", "KV%", "preempt", "hit%");
  if (!targets.empty()) std::printf(" %5s", "meets");
  std::printf("\n");
  for (const auto& row : rows) {
    const auto& r = row.result;
    const auto& s = r.summary;
    const double steps = double(std::max<std::uint64_t>(1, r.num_steps));
    char good[16] = "-";
    if (s.goodput) std::snprintf(good, sizeof good, "%.2f", *s.goodput);
    auto triple = [](const bench::metric_stats& m) {
      char text[32];
      std::snprintf(text, sizeof text, "%.1f/%.1f/%.1f", pct(m, 50), pct(m, 90), pct(m, 99));
      return std::string(text);
    };
    head.print(row);
    std::printf(" %6d %6d %7d %7d %5d %6d %6d %7.2f %9.1f %7s %24s %24s %24s %24s %6.1f %5.1f %7llu %5.1f",
                row.budget, s.num_completed, s.num_refused, s.num_timed_out, s.num_shed, s.num_cancelled,
                s.num_other_failed(), s.request_throughput, s.output_throughput,
                good, triple(s.ttft_ms).c_str(), triple(s.tpot_ms).c_str(), triple(s.itl_ms).c_str(),
                triple(s.e2el_ms).c_str(), r.batch_size_sum / steps, 100.0 * r.kv_usage_sum / steps,
                (unsigned long long)r.counters.num_preemptions, 100.0 * s.prefix_cache_hit_rate());
    if (!targets.empty()) std::printf(" %5s", meets(row, targets) ? "yes" : "no");
    std::printf("\n");
  }
  std::printf("(virtual time; latencies in ms; done = requests completed; refused = by the admission gate (429 "
              "queue_full); timeout = past server.max_queue_time_s or request_timeout_s; shed = by the policy; cancel "
              "= by their client; failed = any other error; req/s, out tok/s and latencies count completed requests "
              "only; good/s = requests meeting every SLO per second; batch = mean sequences per step; KV%% = mean KV "
              "usage; hit%% = prompt tokens from the prefix cache%s)\n",
              targets.empty() ? "" : "; meets = every --target met and a request completed");
  if (targets.empty()) return;
  // The cheapest answer: the fewest replicas, then the first row in the table's order.
  std::string wanted;
  for (const auto& t : targets) wanted += (wanted.empty() ? "" : ", ") + t.text;
  const run_row* best = nullptr;
  int num_met = 0;
  for (const auto& row : rows) {
    if (!meets(row, targets)) continue;
    ++num_met;
    if (best == nullptr || row.replicas < best->replicas) best = &row;
  }
  if (best == nullptr) {
    std::printf("targets %s: met by no run\n", wanted.c_str());
    return;
  }
  std::string where = "policy " + best->policy;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] != "replicas") where += ", " + keys[i] + " " + best->point.labels.at(i);
  }
  if (best->replicas > 1) where += ", routed by " + best->route;
  std::printf("targets %s: met by %d of %zu runs; the fewest replicas: %d (%s)\n", wanted.c_str(), num_met,
              rows.size(), best->replicas, where.c_str());
}

/// The rerank workload's table, per call, as `bench offline --workload rerank` prints it.
void print_rerank_table(const std::vector<run_row>& rows, const std::vector<std::string>& keys, bool show_route) {
  const row_head head(keys, show_route);
  head.print_names();
  std::printf(" %6s %6s %6s %8s %10s %7s %7s %9s %9s %9s %6s %6s\n", "budget", "calls", "failed", "docs/s",
              "prompt t/s", "cached",
              "calls/s", "lat p50", "lat p99", "lat max", "batch", "steps");
  for (const auto& row : rows) {
    const auto& r = row.result;
    const auto& c = *row.calls;
    const double d = std::max(1e-9, r.duration_s), steps = double(std::max<std::uint64_t>(1, r.num_steps));
    const double cached = double(c.num_cached_tokens) / double(std::max(1LL, c.num_prompt_tokens));
    head.print(row);
    const int done = c.num_calls - c.num_failed_calls;
    std::printf(" %6d %6d %6d %8.1f %10.0f %6.1f%% %7.2f %9.3f %9.3f %9.3f %6.1f %6llu\n", row.budget, done,
                c.num_failed_calls,
                c.num_documents / d, double(c.num_prompt_tokens) / d, 100.0 * cached, done / d,
                pct(c.latency_ms, 50) / 1e3, pct(c.latency_ms, 99) / 1e3, c.latency_ms.max / 1e3,
                r.batch_size_sum / steps, (unsigned long long)r.num_steps);
  }
  std::printf("(virtual time; calls = rerank calls with every document scored; failed = calls with a document "
              "that was not; latency per call in seconds, its "
              "arrival to its last score; cached = prompt tokens from the prefix cache; batch = mean sequences per "
              "step)\n");
}

nlohmann::json to_json(const run_row& row, const std::vector<std::string>& keys,
                       const std::vector<latency_target>& targets) {
  const auto& r = row.result;
  nlohmann::json records = nlohmann::json::array();
  for (const auto& rec : r.records) records.push_back(app::to_json(rec));
  nlohmann::json j = {{"policy", row.policy},
                      {"request_rate", std::isfinite(row.request_rate) ? nlohmann::json(row.request_rate) : "inf"},
                      {"max_num_batched_tokens", row.budget},
                      {"max_num_seqs", row.max_num_seqs},
                      {"summary", app::to_json(r.summary)},
                      {"duration_s", r.duration_s},
                      {"busy_s", r.busy_s},
                      {"num_steps", r.num_steps},
                      {"batch_size_sum", r.batch_size_sum},
                      {"kv_usage_sum", r.kv_usage_sum},
                      {"preemptions", r.counters.num_preemptions},
                      {"shed", r.counters.num_shed},
                      {"prefix_cache_hit_rate", r.summary.prefix_cache_hit_rate()},
                      {"replicas", row.replicas},
                      {"rejected", r.num_rejected},
                      {"cancelled", r.num_cancelled},
                      {"requests", std::move(records)}};
  if (row.calls) {
    const auto& c = *row.calls;
    j["rerank"] = {{"calls", c.num_calls},
                   {"failed_calls", c.num_failed_calls},
                   {"documents", c.num_documents},
                   {"prompt_tokens", c.num_prompt_tokens},
                   {"cached_tokens", c.num_cached_tokens},
                   {"documents_per_s", c.num_documents / std::max(1e-9, r.duration_s)},
                   {"latency_ms", app::to_json(c.latency_ms)},
                   {"call_latency_s", c.latency_s}};
  }
  if (row.replicas > 1) {
    nlohmann::json per = nlohmann::json::array();
    for (const auto& rep : r.replicas)
      per.push_back({{"routed", rep.num_routed},
                     {"num_steps", rep.num_steps},
                     {"busy_s", rep.busy_s},
                     {"preemptions", rep.counters.num_preemptions},
                     {"prefix_cache_queries", rep.counters.num_prefix_cache_queries},
                     {"prefix_cache_hits", rep.counters.num_prefix_cache_hits}});
    j["route_policy"] = row.route;
    j["refused_route_choices"] = r.num_refused_route_choices;
    j["per_replica"] = std::move(per);
    j["replica_of"] = r.replica_of;
  }
  if (!keys.empty()) {
    nlohmann::json sweep = nlohmann::json::object();
    for (std::size_t i = 0; i < keys.size(); ++i) sweep[keys[i]] = row.point.labels.at(i);
    j["sweep"] = std::move(sweep);
  }
  if (!targets.empty()) j["meets_targets"] = meets(row, targets);
  if (row.replay)
    j["replay"] = {{"replayed", (*row.replay)[0]}, {"differing", (*row.replay)[1]}, {"recorded", (*row.replay)[2]}};
  return j;
}

}  // namespace inflight::app

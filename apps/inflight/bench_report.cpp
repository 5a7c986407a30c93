#include "apps/inflight/bench_report.hpp"

#include <fstream>

#include "apps/inflight/commands.hpp"

namespace inflight::app {

nlohmann::json to_json(const bench::request_record& r) {
  nlohmann::json j = {{"index", r.index},         {"success", r.is_success},         {"start_s", r.start_s},
                      {"ttft_s", r.ttft_s},       {"e2el_s", r.e2el_s},             {"tpot_s", r.tpot_s()},
                      {"itl_s", r.itl_s},         {"prompt_tokens", r.prompt_tokens}, {"output_tokens", r.output_tokens},
                      {"cached_tokens", r.cached_tokens},
                      {"accepted_prediction_tokens", r.accepted_prediction_tokens},
                      {"rejected_prediction_tokens", r.rejected_prediction_tokens}};
  if (!r.error.empty()) j["error"] = r.error;
  if (r.http_status != 0) j["status"] = r.http_status;
  if (!r.error_code.empty()) j["code"] = r.error_code;
  if (!r.is_success) j["outcome"] = bench::to_string(bench::outcome_of(r));
  if (!r.tag.empty()) j["tag"] = r.tag;
  if (!r.finish_reason.empty()) j["finish_reason"] = r.finish_reason;
  if (!r.output_text.empty()) j["output_text"] = r.output_text;
  return j;
}

nlohmann::json to_json(const bench::metric_stats& s) {
  nlohmann::json j = {{"mean", s.mean}, {"median", s.median}, {"std", s.stddev}, {"max", s.max}, {"count", s.count}};
  for (const auto& [p, v] : s.percentiles) {
    char key[32];
    std::snprintf(key, sizeof key, "p%g", p);
    j[key] = v;
  }
  return j;
}

nlohmann::json to_json(const bench::bench_summary& s) {
  nlohmann::json j = {{"completed", s.num_completed},
                      {"failed", s.num_failed},
                      {"refused", s.num_refused},
                      {"timed_out", s.num_timed_out},
                      {"shed", s.num_shed},
                      {"cancelled", s.num_cancelled},
                      {"other_failed", s.num_other_failed()},
                      {"duration_s", s.duration_s},
                      {"total_input_tokens", s.total_input_tokens},
                      {"total_output_tokens", s.total_output_tokens},
                      {"total_cached_tokens", s.total_cached_tokens},
                      {"total_accepted_prediction_tokens", s.total_accepted_prediction_tokens},
                      {"total_rejected_prediction_tokens", s.total_rejected_prediction_tokens},
                      {"prefix_cache_hit_rate", s.prefix_cache_hit_rate()},
                      {"request_throughput", s.request_throughput},
                      {"output_throughput", s.output_throughput},
                      {"total_token_throughput", s.total_token_throughput},
                      {"peak_concurrency", s.peak_concurrency},
                      {"ttft_ms", to_json(s.ttft_ms)},
                      {"tpot_ms", to_json(s.tpot_ms)},
                      {"itl_ms", to_json(s.itl_ms)},
                      {"e2el_ms", to_json(s.e2el_ms)}};
  if (s.goodput) j["goodput"] = *s.goodput;
  j["failures"] = nlohmann::json::array();
  for (const auto& f : s.top_failures) {
    j["failures"].push_back({{"status", f.http_status != 0 ? nlohmann::json(f.http_status) : nlohmann::json(nullptr)},
                             {"error", f.error},
                             {"count", f.count}});
  }
  return j;
}

std::string failure_line(const bench::bench_summary& s) {
  if (s.num_failed == 0) return {};
  std::string line = std::to_string(s.num_failed) + " of " + std::to_string(s.num_failed + s.num_completed) +
                     " requests failed: ";
  for (std::size_t i = 0; i < s.top_failures.size(); ++i) {
    if (i > 0) line += "; ";
    line += std::to_string(s.top_failures[i].count) + " x " + s.top_failures[i].error;
  }
  return line;
}

std::string outcome_counts(const bench::bench_summary& s) {
  std::string out;
  const auto add = [&](int n, const char* what) {
    if (n > 0) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(s.num_refused, "refused");
  add(s.num_timed_out, "timed out");
  add(s.num_shed, "shed");
  add(s.num_cancelled, "cancelled");
  add(s.num_other_failed(), "failed");
  return out;
}

void add_allow_failures_flag(CLI::App& cmd, bool& allow_failures) {
  cmd.add_flag("--allow-failures", allow_failures,
               "exit 0 although a run lost requests (refused, timed out, shed or failed); without it such a run "
               "ends the command with exit status " +
                   std::to_string(lost_requests_exit_code) + " after its output");
}

void check_every_request_completed(const std::string& command, const std::vector<labelled_summary>& runs,
                                   bool allow_failures) {
  std::fflush(stdout);  // the tables first, then the verdict
  int num_lossy = 0;
  for (const auto& run : runs) {
    const auto& s = run.summary;
    if (s.num_lost() == 0) continue;
    ++num_lossy;
    std::fprintf(stderr, "%s: %s: %d of %d requests did not complete (%s)\n", command.c_str(), run.label.c_str(),
                 s.num_lost(), s.num_completed + s.num_failed, outcome_counts(s).c_str());
  }
  if (num_lossy == 0) return;
  std::fprintf(stderr,
               "%s: %d of %zu runs lost requests: their throughput and latencies count only the requests that "
               "completed%s\n",
               command.c_str(), num_lossy, runs.size(), allow_failures ? " (--allow-failures: exit 0)" : "");
  if (!allow_failures) throw CLI::RuntimeError(lost_requests_exit_code);
}

namespace {

void print_metric(std::FILE* out, const char* name, const char* label, const bench::metric_stats& m) {
  std::fprintf(out, "%s\n", std::string(std::string("---") + label + std::string(46, '-')).substr(0, 50).c_str());
  std::fprintf(out, "%-40s %10.2f\n", (std::string("Mean ") + name + " (ms):").c_str(), m.mean);
  std::fprintf(out, "%-40s %10.2f\n", (std::string("Median ") + name + " (ms):").c_str(), m.median);
  std::fprintf(out, "%-40s %10.2f\n", (std::string("Std ") + name + " (ms):").c_str(), m.stddev);
  for (const auto& [p, v] : m.percentiles) {
    char key[64];
    std::snprintf(key, sizeof key, "P%g %s (ms):", p, name);
    std::fprintf(out, "%-40s %10.2f\n", key, v);
  }
}

}  // namespace

void print_summary(std::FILE* out, const std::string& title, const bench::bench_summary& s) {
  std::string head = "=" + std::string(" ") + title + " ";
  head.resize(50, '=');
  std::fprintf(out, "%s\n", head.c_str());
  std::fprintf(out, "%-40s %10d\n", "Successful requests:", s.num_completed);
  std::fprintf(out, "%-40s %10d\n", "Failed requests:", s.num_failed);
  const std::pair<const char*, int> kinds[] = {{"  refused (queue full, no engine):", s.num_refused},
                                               {"  timed out (queue time, deadline):", s.num_timed_out},
                                               {"  shed by the policy:", s.num_shed},
                                               {"  cancelled by the client:", s.num_cancelled},
                                               {"  other failures:", s.num_other_failed()}};
  for (const auto& [label, n] : kinds) {
    if (n > 0) std::fprintf(out, "%-40s %10d\n", label, n);
  }
  std::fprintf(out, "%-40s %10.2f\n", "Benchmark duration (s):", s.duration_s);
  std::fprintf(out, "%-40s %10lld\n", "Total input tokens:", s.total_input_tokens);
  std::fprintf(out, "%-40s %10lld\n", "Total generated tokens:", s.total_output_tokens);
  std::fprintf(out, "%-40s %10.2f\n", "Prefix cache hit rate (%):", 100.0 * s.prefix_cache_hit_rate());
  if (const long long drafted = s.total_accepted_prediction_tokens + s.total_rejected_prediction_tokens; drafted > 0) {
    std::fprintf(out, "%-40s %10lld\n", "Drafted tokens (speculative):", drafted);
    std::fprintf(out, "%-40s %10.2f\n", "Draft acceptance (%):", 100.0 * double(s.total_accepted_prediction_tokens) / double(drafted));
  }
  // Throughputs count the completed requests; with failures the label says so.
  const bool is_partial = s.num_failed > 0;
  std::fprintf(out, "%-40s %10.2f\n",
               is_partial ? "Request throughput (completed req/s):" : "Request throughput (req/s):",
               s.request_throughput);
  if (s.goodput) std::fprintf(out, "%-40s %10.2f\n", "Request goodput (req/s):", *s.goodput);
  std::fprintf(out, "%-40s %10.2f\n",
               is_partial ? "Output token throughput (completed, tok/s):" : "Output token throughput (tok/s):",
               s.output_throughput);
  std::fprintf(out, "%-40s %10.2f\n",
               is_partial ? "Total token throughput (completed, tok/s):" : "Total token throughput (tok/s):",
               s.total_token_throughput);
  std::fprintf(out, "%-40s %10d\n", "Peak concurrent requests:", s.peak_concurrency);
  print_metric(out, "TTFT", "Time to First Token", s.ttft_ms);
  print_metric(out, "TPOT", "Time per Output Token (excl. 1st token)", s.tpot_ms);
  print_metric(out, "ITL", "Inter-token Latency", s.itl_ms);
  print_metric(out, "E2EL", "End-to-end Latency", s.e2el_ms);
  std::fprintf(out, "%s\n", std::string(50, '=').c_str());
}

void write_json_file(const std::string& path, const nlohmann::json& doc) {
  std::ofstream out(path);
  if (!out) fail("cannot write " + path);
  // Server messages and body excerpts are not always valid UTF-8: replace, never throw.
  out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  if (!out) fail("error writing " + path);
}

}  // namespace inflight::app

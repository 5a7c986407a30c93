#include "core/bench/bench_metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <numeric>

#include "core/engine/request/slo_targets.hpp"

namespace inflight::bench {

double request_record::tpot_s() const {
  if (output_tokens < 2) return 0.0;
  return (e2el_s - ttft_s) / double(output_tokens - 1);
}

request_record record_from_timeline(double send_s, const std::vector<double>& chunk_times_s, double end_s,
                                    int output_tokens) {
  request_record r;
  r.start_s = send_s;
  r.e2el_s = end_s - send_s;
  r.output_tokens = output_tokens;
  if (!chunk_times_s.empty()) r.ttft_s = chunk_times_s.front() - send_s;
  for (std::size_t i = 1; i < chunk_times_s.size(); ++i) r.itl_s.push_back(chunk_times_s[i] - chunk_times_s[i - 1]);
  r.is_success = !chunk_times_s.empty();
  if (!r.is_success) r.error = "no output";
  return r;
}

double percentile(const std::vector<double>& sorted, double p) {
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * double(sorted.size() - 1);
  const auto lo = std::size_t(std::floor(rank));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - double(lo));
}

metric_stats describe(std::vector<double> values, const std::vector<double>& percentiles) {
  metric_stats s;
  s.count = int(values.size());
  if (values.empty()) {
    for (double p : percentiles) s.percentiles.emplace_back(p, 0.0);
    return s;
  }
  std::sort(values.begin(), values.end());
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / double(values.size());
  double sq = 0.0;
  for (double v : values) sq += (v - s.mean) * (v - s.mean);
  s.stddev = std::sqrt(sq / double(values.size()));
  s.median = percentile(values, 50.0);
  s.max = values.back();
  for (double p : percentiles) s.percentiles.emplace_back(p, percentile(values, p));
  return s;
}

namespace {

result<double> parse_number(std::string_view text, std::string_view what) {
  double value = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return make_error(errc::invalid_argument, std::string(what) + ": '" + std::string(text) + "' is not a number");
  }
  return value;
}

std::vector<std::string_view> split_any(std::string_view text, std::string_view separators) {
  std::vector<std::string_view> parts;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto next = text.find_first_of(separators, pos);
    const auto end = next == std::string_view::npos ? text.size() : next;
    if (end > pos) parts.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return parts;
}

}  // namespace

result<slo> parse_slo(std::string_view text) {
  slo out;
  for (auto item : split_any(text, " ,")) {
    const auto colon = item.find(':');
    if (colon == std::string_view::npos) {
      return make_error(errc::invalid_argument, "goodput: expected metric:milliseconds, got '" + std::string(item) + "'");
    }
    const auto key = item.substr(0, colon);
    auto ms = parse_number(item.substr(colon + 1), "goodput");
    if (!ms) return std::unexpected(ms.error());
    if (*ms <= 0.0) return make_error(errc::invalid_argument, "goodput: " + std::string(key) + " must be positive");
    const double seconds = *ms / 1000.0;
    if (key == "ttft") out.ttft_s = seconds;
    else if (key == "tpot") out.tpot_s = seconds;
    else if (key == "e2el") out.e2el_s = seconds;
    else return make_error(errc::invalid_argument, "goodput: unknown metric '" + std::string(key) + "' (ttft, tpot, e2el)");
  }
  return out;
}

result<std::vector<double>> parse_percentiles(std::string_view text) {
  std::vector<double> out;
  for (auto item : split_any(text, ", ")) {
    auto p = parse_number(item, "percentiles");
    if (!p) return std::unexpected(p.error());
    if (*p <= 0.0 || *p > 100.0) return make_error(errc::invalid_argument, "percentiles must be in (0, 100]");
    out.push_back(*p);
  }
  if (out.empty()) return make_error(errc::invalid_argument, "percentiles: none given");
  return out;
}

bool meets(const request_record& r, const slo& o) {
  if (!r.is_success) return false;
  if (o.ttft_s && r.ttft_s > *o.ttft_s) return false;
  if (o.tpot_s && r.tpot_s() > *o.tpot_s) return false;
  if (o.e2el_s && r.e2el_s > *o.e2el_s) return false;
  return true;
}

int peak_concurrency(const std::vector<request_record>& records) {
  std::vector<std::pair<double, int>> events;  // (time, +1 start / -1 end); ends sort first
  for (const auto& r : records) {
    events.emplace_back(r.start_s, +1);
    events.emplace_back(r.start_s + r.e2el_s, -1);
  }
  std::sort(events.begin(), events.end());
  int current = 0, peak = 0;
  for (const auto& [t, delta] : events) {
    current += delta;
    peak = std::max(peak, current);
  }
  return peak;
}

std::vector<failure_group> top_failures(const std::vector<request_record>& records, std::size_t limit) {
  std::vector<failure_group> groups;  // in order of first failure
  std::map<std::pair<int, std::string_view>, std::size_t> index;
  for (const auto& r : records) {
    if (r.is_success) continue;
    const auto [it, is_new] = index.try_emplace({r.http_status, r.error}, groups.size());
    if (is_new) groups.push_back({r.http_status, r.error, 0});
    ++groups[it->second].count;
  }
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.count > b.count; });
  if (groups.size() > limit) groups.resize(limit);
  return groups;
}

spec_figures spec_figures_of(std::uint64_t num_drafts, std::uint64_t num_draft_tokens,
                             std::uint64_t num_accepted_tokens) {
  spec_figures f;
  if (num_draft_tokens > 0) f.acceptance = double(num_accepted_tokens) / double(num_draft_tokens);
  if (num_drafts > 0) f.mean_length = double(num_accepted_tokens + num_drafts) / double(num_drafts);
  return f;
}

double bench_summary::prefix_cache_hit_rate() const {
  return total_input_tokens > 0 ? double(total_cached_tokens) / double(total_input_tokens) : 0.0;
}

const char* to_string(request_outcome outcome) {
  switch (outcome) {
    case request_outcome::completed: return "completed";
    case request_outcome::refused: return "refused";
    case request_outcome::timed_out: return "timed out";
    case request_outcome::shed: return "shed";
    case request_outcome::cancelled: return "cancelled";
    case request_outcome::failed: return "failed";
  }
  return "failed";
}

request_outcome outcome_of(const request_record& r) {
  if (r.is_success) return request_outcome::completed;
  // A shed is a queue_timeout by code (a load condition, 429): its message tells it apart.
  if (r.error.find(shed_message) != std::string::npos) return request_outcome::shed;
  const std::string_view code = r.error_code;
  if (code == "queue_full" || code == "shutting_down" || code == "unavailable") return request_outcome::refused;
  if (code == "queue_timeout" || code == "timeout") return request_outcome::timed_out;
  if (code == "cancelled") return request_outcome::cancelled;
  if (!code.empty()) return request_outcome::failed;
  switch (r.http_status) {  // a server that names no code
    case 429:
    case 503: return request_outcome::refused;
    case 408:
    case 504: return request_outcome::timed_out;
    default: return request_outcome::failed;
  }
}

bench_summary summarize(const std::vector<request_record>& records, double duration_s,
                        const std::vector<double>& percentiles, const slo& objectives) {
  bench_summary s;
  s.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2el;
  int num_good = 0;
  for (const auto& r : records) {
    if (!r.is_success) {
      ++s.num_failed;
      switch (outcome_of(r)) {
        case request_outcome::refused: ++s.num_refused; break;
        case request_outcome::timed_out: ++s.num_timed_out; break;
        case request_outcome::shed: ++s.num_shed; break;
        case request_outcome::cancelled: ++s.num_cancelled; break;
        default: break;
      }
      continue;
    }
    ++s.num_completed;
    s.total_input_tokens += r.prompt_tokens;
    s.total_cached_tokens += r.cached_tokens;
    s.total_accepted_prediction_tokens += r.accepted_prediction_tokens;
    s.total_rejected_prediction_tokens += r.rejected_prediction_tokens;
    s.total_output_tokens += r.output_tokens;
    ttft.push_back(r.ttft_s * 1e3);
    e2el.push_back(r.e2el_s * 1e3);
    if (r.output_tokens > 1) tpot.push_back(r.tpot_s() * 1e3);
    for (double gap : r.itl_s) itl.push_back(gap * 1e3);
    if (meets(r, objectives)) ++num_good;
  }
  if (duration_s > 0.0) {
    s.request_throughput = s.num_completed / duration_s;
    s.output_throughput = double(s.total_output_tokens) / duration_s;
    s.total_token_throughput = double(s.total_input_tokens + s.total_output_tokens) / duration_s;
    if (objectives.is_set()) s.goodput = num_good / duration_s;
  }
  s.peak_concurrency = peak_concurrency(records);
  s.top_failures = top_failures(records, num_top_failures);
  s.ttft_ms = describe(std::move(ttft), percentiles);
  s.tpot_ms = describe(std::move(tpot), percentiles);
  s.itl_ms = describe(std::move(itl), percentiles);
  s.e2el_ms = describe(std::move(e2el), percentiles);
  return s;
}

}  // namespace inflight::bench

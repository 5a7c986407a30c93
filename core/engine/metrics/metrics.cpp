#include "core/engine/metrics/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/engine/metrics/prometheus_merge.hpp"

namespace inflight {
namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void header(std::string& out, const std::string& name, const std::string& help, const char* type) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void sample(std::string& out, const std::string& name, const std::string& labels, double value) {
  out += name + "{" + labels + "} " + number(value) + "\n";
}

const std::vector<double> latency_buckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5,
                                             0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0};
// Mask fills take microseconds with the token index, milliseconds without it; a compile
// takes milliseconds, its lazy index more.
const std::vector<double> mask_buckets = {1e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4,
                                          0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1};
const std::vector<double> compile_buckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                             0.25, 0.5, 1.0, 2.5, 5.0, 10.0};
const std::vector<double> token_buckets = {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
const std::vector<double> acceptance_buckets = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 17};

}  // namespace

histogram::histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void histogram::observe(double value) {
  const auto bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  std::lock_guard lock(mutex_);
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

std::uint64_t histogram::count() const {
  std::lock_guard lock(mutex_);
  return count_;
}

double histogram::sum() const {
  std::lock_guard lock(mutex_);
  return sum_;
}

void histogram::render(std::string& out, const std::string& name, const std::string& help,
                       const std::string& labels) const {
  header(out, name, help, "histogram");
  std::lock_guard lock(mutex_);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    sample(out, name + "_bucket", labels + ",le=\"" + le + "\"", double(cumulative));
  }
  sample(out, name + "_sum", labels, sum_);
  sample(out, name + "_count", labels, double(count_));
}

histogram_counts histogram::counts() const {
  std::lock_guard lock(mutex_);
  return {bounds_, counts_, sum_, count_};
}

double histogram_counts::quantile(double q) const {
  if (count == 0) return 0.0;
  const double rank = std::clamp(q, 0.0, 1.0) * double(count);
  std::uint64_t below = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (double(below + counts[i]) < rank || counts[i] == 0) {
      below += counts[i];
      continue;
    }
    if (i == upper_bounds.size()) return upper_bounds.empty() ? 0.0 : upper_bounds.back();
    const double lo = i == 0 ? 0.0 : upper_bounds[i - 1];
    return lo + (upper_bounds[i] - lo) * (rank - double(below)) / double(counts[i]);
  }
  return upper_bounds.empty() ? 0.0 : upper_bounds.back();
}

result<histogram_counts> difference(const histogram_counts& after, const histogram_counts& before) {
  if (after.upper_bounds != before.upper_bounds || after.counts.size() != before.counts.size())
    return make_error(errc::invalid_argument, "histograms with different buckets");
  histogram_counts d{after.upper_bounds, after.counts, after.sum - before.sum, after.count - before.count};
  if (after.count < before.count) return make_error(errc::invalid_argument, "a histogram count went down");
  for (std::size_t i = 0; i < d.counts.size(); ++i) {
    if (after.counts[i] < before.counts[i]) return make_error(errc::invalid_argument, "a histogram bucket went down");
    d.counts[i] -= before.counts[i];
  }
  return d;
}

namespace {

/// The value after the last space of a sample line.
std::optional<double> sample_value(std::string_view line) {
  const auto space = line.rfind(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string v(line.substr(space + 1));
  if (v == "+Inf") return INFINITY;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (end == v.c_str()) return std::nullopt;
  return x;
}

/// The `le` label of a bucket line.
std::optional<double> le_of(std::string_view line) {
  const auto at = line.find("le=\"");
  if (at == std::string_view::npos) return std::nullopt;
  const auto end = line.find('"', at + 4);
  if (end == std::string_view::npos) return std::nullopt;
  return sample_value(" " + std::string(line.substr(at + 4, end - at - 4)));
}

}  // namespace

result<histogram_counts> parse_histogram(std::string_view text, std::string_view name) {
  const std::string bucket = std::string(name) + "_bucket{", sum = std::string(name) + "_sum", count = std::string(name) + "_count";
  std::map<double, double> cumulative;  // le -> count, summed over label sets
  double total_sum = 0.0, total_count = 0.0;
  bool is_found = false;
  for (std::size_t pos = 0; pos < text.size();) {
    const auto eol = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    const auto value = sample_value(line);
    if (!value) continue;
    if (line.starts_with(bucket)) {
      const auto le = le_of(line);
      if (!le) return make_error(errc::invalid_argument, std::string(name) + ": a bucket line without le");
      cumulative[*le] += *value;
      is_found = true;
    } else if (line.starts_with(sum + "{") || line.starts_with(sum + " ")) {
      total_sum += *value;
    } else if (line.starts_with(count + "{") || line.starts_with(count + " ")) {
      total_count += *value;
    }
  }
  if (!is_found) return make_error(errc::not_found, std::string(name) + ": not in the metrics");
  histogram_counts h;
  double below = 0.0;
  for (const auto& [le, c] : cumulative) {
    if (!std::isinf(le)) h.upper_bounds.push_back(le);
    h.counts.push_back(std::uint64_t(std::max(0.0, c - below)));
    below = c;
  }
  if (h.counts.size() == h.upper_bounds.size()) h.counts.push_back(0);  // no +Inf line
  h.sum = total_sum;
  h.count = std::uint64_t(total_count);
  return h;
}

engine_metrics::engine_metrics()
    : time_to_first_token(latency_buckets),
      inter_token_latency(latency_buckets),
      e2e_request_latency(latency_buckets),
      request_queue_time(latency_buckets),
      iteration_tokens(token_buckets),
      grammar_mask_seconds(mask_buckets),
      grammar_compile_seconds(compile_buckets),
      spec_decode_acceptance_length(acceptance_buckets) {}

void engine_metrics::count_finished(const std::string& reason) {
  std::lock_guard lock(mutex_);
  ++finished_[reason];
}

std::uint64_t engine_metrics::num_finished(const std::string& reason) const {
  std::lock_guard lock(mutex_);
  auto it = finished_.find(reason);
  return it == finished_.end() ? 0 : it->second;
}

void engine_metrics::count_lora_request(const std::string& name) {
  std::lock_guard lock(mutex_);
  ++lora_requests_[name];
}

std::string engine_metrics::render(const std::string& model_name, const engine_gauges& g,
                                   const std::vector<std::string>& adapter_names, int max_lora) const {
  const std::string labels = "model_name=\"" + escape_label_value(model_name) + "\"";
  std::string out;
  auto gauge = [&](const std::string& name, const std::string& help, double v) {
    header(out, "inflight:" + name, help, "gauge");
    sample(out, "inflight:" + name, labels, v);
  };
  auto counter = [&](const std::string& name, const std::string& help, double v) {
    header(out, "inflight:" + name, help, "counter");
    sample(out, "inflight:" + name, labels, v);
  };
  gauge("num_requests_running", "Requests being scheduled (running).", g.num_requests_running);
  gauge("num_requests_waiting", "Requests waiting to be scheduled.", g.num_requests_waiting);
  gauge("kv_cache_usage_perc", "Fraction of KV-cache blocks in use (1 = 100%).", g.kv_cache_usage);
  gauge("draft_kv_cache_usage_perc",
        "Fraction of the draft model's KV blocks in use (speculative decoding; 0 without a draft model).",
        g.draft_kv_cache_usage);
  counter("num_preemptions_total", "Preemptions (by recompute).", double(g.num_preemptions));
  counter("prompt_tokens_total", "Prompt tokens processed.", double(prompt_tokens_total.load()));
  counter("generation_tokens_total", "Tokens generated.", double(generation_tokens_total.load()));
  counter("policy_decisions_rejected_total", "Policy decision entries clipped or refused by the engine.",
          double(g.num_rejected_decisions));
  counter("prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache (at first admission).",
          double(g.num_prefix_cache_queries));
  counter("prefix_cache_hits_total", "Prompt tokens found in the prefix cache (at first admission).",
          double(g.num_prefix_cache_hits));
  counter("engine_step_failures_total", "Engine steps that failed (each failed only its own requests).",
          double(g.num_failed_steps));
  counter("request_refused_total", "Requests refused at submission because the waiting queue was full.",
          double(requests_refused_total.load()));
  counter("request_shed_total", "Requests the scheduling policy shed: they could not meet their latency targets.",
          double(g.num_shed));
  counter("grammar_constrained_steps_total", "Sampled sequence-steps under a grammar's token mask.",
          double(g.num_constrained_steps));
  counter("grammar_refused_total", "Requests refused because their grammar or schema did not compile.",
          double(grammar_refused_total.load()));
  counter("spec_decode_num_drafts_total", "Speculative decoding: drafts checked (one per sequence-step).",
          double(g.num_drafts));
  counter("spec_decode_num_draft_tokens_total", "Speculative decoding: drafted tokens checked.",
          double(g.num_draft_tokens));
  counter("spec_decode_num_accepted_tokens_total", "Speculative decoding: drafted tokens kept.",
          double(g.num_accepted_tokens));
  header(out, "inflight:request_success_total", "Finished requests by finish reason.", "counter");
  {
    std::lock_guard lock(mutex_);
    for (const char* reason : {"stop", "length", "abort", "error"}) {
      auto it = finished_.find(reason);
      sample(out, "inflight:request_success_total", labels + ",finished_reason=\"" + reason + "\"",
             it == finished_.end() ? 0.0 : double(it->second));
    }
  }
  time_to_first_token.render(out, "inflight:time_to_first_token_seconds", "Time to first token.", labels);
  inter_token_latency.render(out, "inflight:inter_token_latency_seconds", "Time between output tokens.", labels);
  e2e_request_latency.render(out, "inflight:e2e_request_latency_seconds", "End-to-end request latency.", labels);
  request_queue_time.render(out, "inflight:request_queue_time_seconds", "Time waiting before first scheduled.",
                            labels);
  iteration_tokens.render(out, "inflight:iteration_tokens_total", "Tokens per engine step.", labels);
  grammar_mask_seconds.render(out, "inflight:grammar_mask_seconds",
                              "Time to fill one sequence's allowed-token mask (per constrained sequence-step).",
                              labels);
  grammar_compile_seconds.render(out, "inflight:grammar_compile_seconds",
                                 "Time to compile a request's grammar (cache misses).", labels);
  spec_decode_acceptance_length.render(out, "inflight:spec_decode_acceptance_length",
                                       "Speculative decoding: tokens one checked draft gave (kept + 1).", labels);
  if (adapter_names.empty()) return out;
  // LoRA: vLLM's info gauge (the adapters of running and of waiting requests), and a
  // counter of requests per adapter.
  const auto names_of = [&](const std::vector<std::string>& names) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ",") + n;
    return escape_label_value(list);
  };
  header(out, "inflight:lora_requests_info", "LoRA adapters of running and waiting requests (value 1).", "gauge");
  sample(out, "inflight:lora_requests_info",
         labels + ",max_lora=\"" + std::to_string(max_lora > 0 ? max_lora : int(adapter_names.size())) + "\",running_lora_adapters=\"" +
             names_of(g.running_adapters) + "\",waiting_lora_adapters=\"" + names_of(g.waiting_adapters) + "\"",
         1.0);
  header(out, "inflight:lora_requests_total", "Requests accepted per LoRA adapter.", "counter");
  std::lock_guard lock(mutex_);
  for (const auto& name : adapter_names) {
    const auto it = lora_requests_.find(name);
    sample(out, "inflight:lora_requests_total", labels + ",lora_name=\"" + escape_label_value(name) + "\"",
           double(it == lora_requests_.end() ? 0 : it->second));
  }
  return out;
}

}  // namespace inflight

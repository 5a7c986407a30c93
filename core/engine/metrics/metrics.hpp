#pragma once
/// Engine metrics in Prometheus' text format, named like vLLM's (`inflight:` prefix)
/// so that existing dashboards adapt. Thread-safe: request actors observe, the
/// gateway renders.

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"

namespace inflight {

/// A histogram's buckets at one moment, for reports (a copy: no lock).
struct histogram_counts {
  std::vector<double> upper_bounds;   ///< finite bucket bounds, ascending
  std::vector<std::uint64_t> counts;  ///< per bucket, not cumulative; one more than the bounds (+Inf)
  double sum = 0.0;
  std::uint64_t count = 0;

  double mean() const { return count ? sum / double(count) : 0.0; }
  /// Prometheus' histogram_quantile(): linear inside the bucket holding rank q * count
  /// (the first bucket starts at 0); a rank in the +Inf bucket answers the largest bound.
  /// 0 when empty. An estimate: its resolution is the bucket's width.
  double quantile(double q) const;
};

/// `after` minus `before`, bucket by bucket (the observations made in between). Errors
/// when the bounds differ or a count went down (e.g. a restarted server).
result<histogram_counts> difference(const histogram_counts& after, const histogram_counts& before);

class histogram {
 public:
  explicit histogram(std::vector<double> upper_bounds);
  void observe(double value);
  /// `# TYPE` line plus buckets, sum and count, each with `labels` (e.g. model_name="x").
  void render(std::string& out, const std::string& name, const std::string& help, const std::string& labels) const;
  std::uint64_t count() const;
  double sum() const;
  /// The buckets, sum and count now.
  histogram_counts counts() const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<std::uint64_t> counts_;  // per bucket, not cumulative; last = +Inf
  double sum_ = 0.0;
  std::uint64_t count_ = 0;
};

/// Values read from the scheduler at scrape time.
struct engine_gauges {
  int num_requests_running = 0;
  int num_requests_waiting = 0;
  double kv_cache_usage = 0.0;  ///< 0..1
  double draft_kv_cache_usage = 0.0;  ///< the draft model's space (speculative decoding), 0..1; 0 without one
  std::uint64_t num_preemptions = 0;
  std::uint64_t num_rejected_decisions = 0;
  std::uint64_t num_prefix_cache_queries = 0;  ///< prompt tokens looked up in the prefix cache
  std::uint64_t num_prefix_cache_hits = 0;     ///< of them, found cached
  std::uint64_t num_failed_steps = 0;  ///< backend steps that failed (their requests failed)
  std::uint64_t num_constrained_steps = 0;  ///< sampled sequence-steps under a grammar mask
  std::uint64_t num_shed = 0;  ///< requests the policy shed (could not meet their latency targets)
  /// Speculative decoding: checked drafts, their tokens, and the tokens kept.
  std::uint64_t num_drafts = 0;
  std::uint64_t num_draft_tokens = 0;
  std::uint64_t num_accepted_tokens = 0;
  /// LoRA: the adapters (their names) of running and of waiting requests, each once.
  std::vector<std::string> running_adapters, waiting_adapters;
};

class engine_metrics {
 public:
  engine_metrics();

  std::atomic<std::uint64_t> prompt_tokens_total{0};
  std::atomic<std::uint64_t> generation_tokens_total{0};
  std::atomic<std::uint64_t> requests_refused_total{0};  ///< refused at submission for load (queue_full)
  histogram time_to_first_token;
  histogram inter_token_latency;
  histogram e2e_request_latency;
  histogram request_queue_time;
  histogram iteration_tokens;
  /// Constrained decoding: seconds to fill one sequence's allowed-token mask (observed by
  /// the scheduler actor, one per constrained sequence-step) ...
  histogram grammar_mask_seconds;
  /// ... seconds to compile a request's grammar (a cache miss, at the edge) ...
  histogram grammar_compile_seconds;
  /// ... and requests refused because their constraint does not compile (a 400).
  std::atomic<std::uint64_t> grammar_refused_total{0};
  /// Speculative decoding: the tokens one checked draft gave (kept drafted tokens + 1).
  histogram spec_decode_acceptance_length;

  /// Counts a finished request under its finish reason (stop, length, abort, error...).
  void count_finished(const std::string& reason);
  std::uint64_t num_finished(const std::string& reason) const;
  /// Counts a request accepted for the LoRA adapter `name`.
  void count_lora_request(const std::string& name);

  /// The whole exposition, every metric labelled with model_name. With LoRA adapters
  /// (`adapter_names`, those registered): vLLM's lora_requests_info gauge (its max_lora:
  /// `max_lora`, or the number of adapters when 0) and a request counter per adapter.
  std::string render(const std::string& model_name, const engine_gauges& gauges,
                     const std::vector<std::string>& adapter_names = {}, int max_lora = 0) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::uint64_t> finished_;
  std::map<std::string, std::uint64_t> lora_requests_;
};

/// The histogram `name` (e.g. "inflight:grammar_mask_seconds") read back from a
/// Prometheus text exposition: its `_bucket` (cumulative, `le` labels), `_sum` and
/// `_count` lines, summed over every label set. not_found when absent.
result<histogram_counts> parse_histogram(std::string_view exposition, std::string_view name);

}  // namespace inflight

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
#include <vector>

namespace inflight {

class histogram {
 public:
  explicit histogram(std::vector<double> upper_bounds);
  void observe(double value);
  /// `# TYPE` line plus buckets, sum and count, each with `labels` (e.g. model_name="x").
  void render(std::string& out, const std::string& name, const std::string& help, const std::string& labels) const;
  std::uint64_t count() const;
  double sum() const;

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
  std::uint64_t num_preemptions = 0;
  std::uint64_t num_rejected_decisions = 0;
  std::uint64_t num_prefix_cache_queries = 0;  ///< prompt tokens looked up in the prefix cache
  std::uint64_t num_prefix_cache_hits = 0;     ///< of them, found cached
  std::uint64_t num_failed_steps = 0;  ///< backend steps that failed (their requests failed)
  std::uint64_t num_constrained_steps = 0;  ///< sampled sequence-steps under a grammar mask
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

  /// Counts a finished request under its finish reason (stop, length, abort, error...).
  void count_finished(const std::string& reason);
  std::uint64_t num_finished(const std::string& reason) const;

  /// The whole exposition, every metric labelled with model_name.
  std::string render(const std::string& model_name, const engine_gauges& gauges) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::uint64_t> finished_;
};

}  // namespace inflight

#pragma once
/// Serving-benchmark arithmetic: per-request records built from a client's clock, and
/// the summary `inflight bench serve` prints (the conventions of `vllm bench serve`:
/// TTFT, TPOT, ITL, E2EL, throughput, goodput under SLOs).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"

namespace inflight::bench {

/// One request as the client saw it. Times in seconds; `start_s` is relative to the
/// start of the run, the others relative to `start_s`.
struct request_record {
  int index = 0;                ///< position in the dataset
  bool is_success = false;
  std::string error;            ///< why it failed (empty on success); "HTTP <status>: ..." for an error answer
  int http_status = 0;          ///< the status of a non-2xx answer (0: none, e.g. a connection error)
  std::string error_code;       ///< the error's machine name where known ("queue_full", "timeout", ...; errc names)
  double start_s = 0.0;         ///< when the request was sent
  double ttft_s = 0.0;          ///< send -> first chunk with output
  double e2el_s = 0.0;          ///< send -> end of the response
  std::vector<double> itl_s;    ///< every gap between consecutive output chunks
  int prompt_tokens = 0;
  int output_tokens = 0;        ///< from the server's usage
  int cached_tokens = 0;        ///< prompt tokens the prefix cache held (usage.prompt_tokens_details)
  /// Speculative decoding (usage.completion_tokens_details): drafted tokens kept and refuted.
  int accepted_prediction_tokens = 0;
  int rejected_prediction_tokens = 0;
  std::string tag;              ///< dataset tag (interference: "decode" / "long")
  std::string finish_reason;    ///< "stop", "length", ... where the server said (empty: unknown)
  std::string output_text;      ///< the generated text, kept only where a benchmark checks it (structured)

  /// (E2EL - TTFT) / (output tokens - 1); 0 for fewer than two tokens.
  double tpot_s() const;
};

/// Builds a record from a timeline: send time, arrival time of each output chunk, end
/// time (all on one clock, seconds), and the output token count.
request_record record_from_timeline(double send_s, const std::vector<double>& chunk_times_s, double end_s,
                                    int output_tokens);

/// Linear interpolation between closest ranks (numpy's default); p in [0, 100].
/// `sorted` must be ascending and non-empty.
double percentile(const std::vector<double>& sorted, double p);

/// mean / median / standard deviation (population) / chosen percentiles of a metric.
struct metric_stats {
  double mean = 0.0;
  double median = 0.0;
  double stddev = 0.0;
  double max = 0.0;
  std::vector<std::pair<double, double>> percentiles;  ///< (p, value)
  int count = 0;
};

metric_stats describe(std::vector<double> values, const std::vector<double>& percentiles);

/// Service-level objectives for goodput, in seconds; unset ones are not checked.
struct slo {
  std::optional<double> ttft_s;
  std::optional<double> tpot_s;
  std::optional<double> e2el_s;
  bool is_set() const { return ttft_s || tpot_s || e2el_s; }
};

/// Parses "ttft:500 tpot:50 e2el:2000" (milliseconds; spaces or commas between).
result<slo> parse_slo(std::string_view text);
/// Parses "50,90,99" (each in (0, 100]).
result<std::vector<double>> parse_percentiles(std::string_view text);

/// True when a successful request meets every objective that is set.
bool meets(const request_record& r, const slo& objectives);

/// Failed requests with the same status and error text.
struct failure_group {
  int http_status = 0;
  std::string error;
  int count = 0;
};

/// How many failure groups a summary lists.
inline constexpr std::size_t num_top_failures = 3;

/// The `limit` most frequent (status, error) pairs of the failed records, most frequent
/// first; of equal counts, the one that failed first in `records` comes first.
std::vector<failure_group> top_failures(const std::vector<request_record>& records, std::size_t limit);

/// How a request of a benchmark run ended. Throughput and latency count completed
/// requests only; every other outcome is a request the run lost, shown beside them.
enum class request_outcome {
  completed,  ///< it finished (stop or length) and delivered its output
  refused,    ///< the server would not take it: waiting queue full, shutting down, no engine (429 / 503)
  timed_out,  ///< it waited past server.max_queue_time_s, or passed its deadline (429 queue_timeout, 504)
  shed,       ///< the scheduling policy dropped it: it could no longer meet its latency target
  cancelled,  ///< its client cancelled it (the benchmark asked for that)
  failed,     ///< anything else: an error answer, a broken connection, a bad request
};

/// "completed", "refused", "timed out", "shed", "cancelled", "failed".
const char* to_string(request_outcome outcome);

/// The outcome of one record: from its error code where the server gave one (inflight's
/// errc names, which other servers share for the common cases), else from its HTTP status.
request_outcome outcome_of(const request_record& r);

struct bench_summary {
  int num_completed = 0;
  /// Every request that did not complete: the sum of the counts below and the other failures.
  int num_failed = 0;
  int num_refused = 0;
  int num_timed_out = 0;
  /// Of the failed, requests the scheduling policy shed (could not meet their targets).
  int num_shed = 0;
  int num_cancelled = 0;
  /// Failures that are none of the above (request_outcome::failed).
  int num_other_failed() const { return num_failed - num_refused - num_timed_out - num_shed - num_cancelled; }
  /// Requests the run lost that its client did not ask to lose (all but the cancelled).
  int num_lost() const { return num_failed - num_cancelled; }
  double duration_s = 0.0;
  long long total_input_tokens = 0;
  long long total_output_tokens = 0;
  long long total_cached_tokens = 0;    ///< prompt tokens taken from the prefix cache
  long long total_accepted_prediction_tokens = 0;  ///< speculative decoding: drafted tokens kept ...
  long long total_rejected_prediction_tokens = 0;  ///< ... and refuted
  double request_throughput = 0.0;      ///< completed requests / s
  double output_throughput = 0.0;       ///< output tokens / s
  double total_token_throughput = 0.0;  ///< (input + output) tokens / s
  std::optional<double> goodput;        ///< requests meeting the SLOs / s (when SLOs are set)
  int peak_concurrency = 0;             ///< most requests in flight at once
  /// Share of the prompt tokens the prefix cache held (0 when the server reports none).
  double prefix_cache_hit_rate() const;
  metric_stats ttft_ms, tpot_ms, itl_ms, e2el_ms;
  std::vector<failure_group> top_failures;  ///< the num_top_failures most frequent failures
};

/// Speculative decoding's figures from an engine's counters (0 where nothing was drafted).
struct spec_figures {
  double acceptance = 0.0;   ///< kept / drafted tokens
  double mean_length = 0.0;  ///< tokens one checked draft gave: the kept ones + 1
};
spec_figures spec_figures_of(std::uint64_t num_drafts, std::uint64_t num_draft_tokens,
                             std::uint64_t num_accepted_tokens);

/// Summary over successful records; `duration_s` is the run's wall time.
bench_summary summarize(const std::vector<request_record>& records, double duration_s,
                        const std::vector<double>& percentiles, const slo& objectives);

/// Most intervals [start_s, start_s + e2el_s) overlapping at one instant.
int peak_concurrency(const std::vector<request_record>& records);

}  // namespace inflight::bench

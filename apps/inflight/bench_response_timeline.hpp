#pragma once
// What one benchmark request's answer delivered so far (send time, output chunks, usage)
// and how it becomes a record: the part of the serving client that does not touch the
// network.

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "core/bench/bench_metrics.hpp"

namespace inflight::app {

/// Receives a request's record when it ends.
using request_done = std::function<void(bench::request_record)>;

class response_timeline {
 public:
  explicit response_timeline(request_done done) : done_(std::move(done)) {}
  /// The request leaves now.
  void sent();
  /// A chunk with output arrived now.
  void chunk();
  /// An event that carries no output yet (empty text while a character is pending).
  void event();
  /// The server's `usage` object (token counts, cached prompt tokens).
  void usage(const nlohmann::json& u);
  /// A choice or message: its `finish_reason` when set, and with `keep_text` its text appended.
  void output(const nlohmann::json& choice, bool keep_text);
  bool is_finished() const { return is_finished_; }
  /// Ends the record: a success when `error` is empty, else a failure with the status
  /// of the server's error answer (0 when there was none) and its error code name
  /// ("queue_full", ...; empty when unknown). Later calls do nothing.
  void finish(std::string error = {}, int http_status = 0, std::string error_code = {});

 private:
  request_done done_;
  double send_s_ = 0.0;
  double first_event_s_ = 0.0;
  std::vector<double> chunks_;
  int prompt_tokens_ = 0;
  int cached_tokens_ = 0;
  int accepted_prediction_tokens_ = 0, rejected_prediction_tokens_ = 0;
  int completion_tokens_ = -1;
  std::string finish_reason_;
  std::string text_;
  bool is_finished_ = false;
};

/// An event (or a choice of a whole answer) carries output when it has text or token ids.
bool has_output(const nlohmann::json& j);

}  // namespace inflight::app

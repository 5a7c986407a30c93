#include "apps/inflight/bench_response_timeline.hpp"

#include "apps/inflight/bench_report.hpp"

namespace inflight::app {

void response_timeline::sent() { send_s_ = monotonic_seconds(); }

void response_timeline::chunk() { chunks_.push_back(monotonic_seconds()); }

void response_timeline::event() {
  if (first_event_s_ == 0.0) first_event_s_ = monotonic_seconds();
}

void response_timeline::usage(const nlohmann::json& u) {
  if (!u.is_object()) return;
  prompt_tokens_ = u.value("prompt_tokens", prompt_tokens_);
  completion_tokens_ = u.value("completion_tokens", completion_tokens_);
  // Servers without prefix caching omit the details or send null.
  if (auto d = u.find("prompt_tokens_details"); d != u.end() && d->is_object()) {
    if (auto c = d->find("cached_tokens"); c != d->end() && c->is_number_integer()) cached_tokens_ = c->get<int>();
  }
  // Speculative decoding's drafts (inflight; OpenAI's predicted outputs name them so).
  if (auto d = u.find("completion_tokens_details"); d != u.end() && d->is_object()) {
    accepted_prediction_tokens_ = d->value("accepted_prediction_tokens", accepted_prediction_tokens_);
    rejected_prediction_tokens_ = d->value("rejected_prediction_tokens", rejected_prediction_tokens_);
  }
}

void response_timeline::output(const nlohmann::json& choice, bool keep_text) {
  if (!choice.is_object()) return;
  if (const auto f = choice.find("finish_reason"); f != choice.end() && f->is_string()) finish_reason_ = f->get<std::string>();
  if (const auto t = choice.find("text"); keep_text && t != choice.end() && t->is_string()) text_ += t->get<std::string>();
}

void response_timeline::finish(std::string error, int http_status, std::string error_code) {
  if (is_finished_) return;
  is_finished_ = true;
  const int tokens = completion_tokens_ >= 0 ? completion_tokens_ : int(chunks_.size());
  // A stream whose tokens all decoded to empty text still delivered them: its first
  // event stands in for the first token.
  if (chunks_.empty() && first_event_s_ > 0.0 && tokens > 0 && error.empty()) chunks_.push_back(first_event_s_);
  auto r = bench::record_from_timeline(send_s_, chunks_, monotonic_seconds(), tokens);
  r.prompt_tokens = prompt_tokens_;
  r.cached_tokens = cached_tokens_;
  r.accepted_prediction_tokens = accepted_prediction_tokens_;
  r.rejected_prediction_tokens = rejected_prediction_tokens_;
  r.finish_reason = std::move(finish_reason_);
  r.output_text = std::move(text_);
  if (!error.empty()) {
    r.is_success = false;
    r.error = std::move(error);
    r.http_status = http_status;
    r.error_code = std::move(error_code);
  }
  done_(std::move(r));
}

bool has_output(const nlohmann::json& j) {
  const auto text = j.find("text");
  const auto ids = j.find("token_ids");
  return (text != j.end() && text->is_string() && !text->get_ref<const std::string&>().empty()) ||
         (ids != j.end() && ids->is_array() && !ids->empty());
}

}  // namespace inflight::app

#include "apps/inflight/bench_engine_run.hpp"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <tuple>
#include <thread>

#include "actors/gateway/engine_events.hpp"
#include "actors/gateway/step_fanout.hpp"
#include "apps/inflight/bench_report.hpp"

namespace inflight::app {
namespace {

/// Counts finished requests for the whole run.
struct completion_latch {
  std::mutex mutex;
  std::condition_variable cv;
  int num_done = 0;
  void count() {
    std::lock_guard lock(mutex);
    ++num_done;
    cv.notify_all();
  }
  void wait_for(int n) {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return num_done >= n; });
  }
};

/// Records arrival times of token events and the finish, on the engine's threads.
class timeline_sink final : public request_sink {
 public:
  timeline_sink(double send_s, completion_latch& latch) : send_s_(send_s), latch_(&latch) {}
  void on_token(const token_event& ev) override {
    if (ev.token_ids.empty()) return;
    std::lock_guard lock(mutex_);
    chunks_.push_back(monotonic_seconds());
  }
  void on_finish(const finish_event& ev) override {
    {
      std::lock_guard lock(mutex_);
      end_s_ = monotonic_seconds();
      finish_ = ev;
    }
    latch_->count();
  }
  bench::request_record record(double run_start_s) const {
    std::lock_guard lock(mutex_);
    auto r = bench::record_from_timeline(send_s_, chunks_, end_s_, finish_.completion_tokens);
    r.start_s = send_s_ - run_start_s;
    r.finish_reason = finish_name(finish_.reason);
    r.prompt_tokens = finish_.prompt_tokens;
    r.cached_tokens = finish_.cached_tokens;
    if (finish_.reason != finish_reason::length && finish_.reason != finish_reason::stop) {
      r.is_success = false;
      r.error = finish_.cause ? finish_.cause->message : std::string("finished abnormally");
      // As a served client would see it: the code's name and HTTP status.
      const errc code = finish_.cause ? finish_.cause->code
                        : finish_.reason == finish_reason::cancelled ? errc::cancelled : errc::internal;
      r.error_code = to_string(code);
      r.http_status = info(code).http_status;
    }
    return r;
  }

 private:
  mutable std::mutex mutex_;
  double send_s_;
  completion_latch* latch_;
  std::vector<double> chunks_;
  double end_s_ = 0.0;
  finish_event finish_;
};

/// One subscriber of the step feed on its own thread, woken by the engine as the SSE
/// session is, encoding each event to its wire text.
/// Every step the engine runs, as a step profile's sample: its shape (each sequence's
/// tokens and context) and its time from plan to applied result. Called on the
/// scheduler's thread.
class step_sampler final : public step_sink {
 public:
  void on_step(const step_summary& step) override {
    if (step.num_steps != 1 || step.num_seqs_dropped > 0 || step.seqs.empty()) return;  // not one whole step
    sim::profile_sample sample;
    sample.prefill_seqs = 0;
    sample.seconds = step.end_s - step.start_s;
    sample.start_s = step.start_s;
    if (!(sample.seconds > 0.0)) return;
    for (const auto& q : step.seqs) {
      const int tokens = q.num_prefill_tokens + q.num_decode_tokens + q.num_draft_tokens;  // drafted rows are rows
      sample.seqs.push_back({tokens, q.position + tokens});
    }
    std::lock_guard lock(mutex_);
    samples_.push_back(std::move(sample));
  }
  std::vector<sim::profile_sample> take() {
    std::lock_guard lock(mutex_);
    return std::move(samples_);
  }

 private:
  std::mutex mutex_;
  std::vector<sim::profile_sample> samples_;
};

class feed_reader {
 public:
  feed_reader(engine& eng, const server_settings& settings)
      : fanout_(std::make_shared<gateway::step_fanout>(eng, settings)) {}
  ~feed_reader() { stop(); }

  result<void> start() {
    auto sub = fanout_->try_subscribe();
    if (!sub) return make_error(errc::internal, "step feed: " + sub.error().message);
    subscription_ = std::move(*sub);
    subscription_->set_wake([this] {
      std::lock_guard lock(mutex_);
      is_woken_ = true;
      cv_.notify_one();
    });
    thread_ = std::thread([this] { read(); });
    return {};
  }
  /// Stops reading and unsubscribes; returns {events, bytes} encoded.
  std::pair<long long, long long> stop() {
    if (thread_.joinable()) {
      {
        std::lock_guard lock(mutex_);
        is_stopping_ = true;
        cv_.notify_one();
      }
      thread_.join();
    }
    subscription_.reset();
    return {num_events_, num_bytes_};
  }

 private:
  void read() {
    for (;;) {
      // Read until a take() finds nothing: only that arms the next wake.
      for (auto steps = subscription_->take(); !steps.empty(); steps = subscription_->take()) {
        for (const auto& step : steps) {
          ++num_events_;
          num_bytes_ += (long long)gateway::step_event_text(step).size();
        }
      }
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return is_woken_ || is_stopping_; });
      if (is_stopping_) return;
      is_woken_ = false;
    }
  }

  std::shared_ptr<gateway::step_fanout> fanout_;
  std::shared_ptr<gateway::step_subscription> subscription_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool is_woken_ = false, is_stopping_ = false;
  long long num_events_ = 0, num_bytes_ = 0;
};

generate_request make_request(const bench::bench_prompt& p, std::shared_ptr<const token_index> grammar) {
  generate_request r;
  r.prompt = p.prompt_ids;
  r.params.temperature = 0.0f;
  r.params.max_tokens = p.output_len > 0 ? p.output_len : 16;
  r.params.ignore_eos = true;
  r.params.grammar = std::move(grammar);
  return r;
}

}  // namespace

result<engine_run> run_engine_workload(const deployment& d, const loaded_model& model,
                                       const std::vector<bench::bench_prompt>& prompts,
                                       step_watch watch,
                                       const std::vector<std::shared_ptr<const token_index>>& grammars) {
  if (!grammars.empty() && grammars.size() != prompts.size())
    return make_error(errc::invalid_argument, "one grammar per prompt (or none)");
  auto eng = engine::start(d, model);
  if (!eng) return std::unexpected(eng.error());
  std::optional<feed_reader> feed;
  std::shared_ptr<step_sampler> sampler;
  if (watch == step_watch::record) {
    sampler = std::make_shared<step_sampler>();
    (*eng)->set_step_sink(sampler);
  }
  if (watch == step_watch::feed) {
    feed.emplace(**eng, d.server);
    if (auto started = feed->start(); !started) {
      (*eng)->shutdown(0.0);
      return std::unexpected(started.error());
    }
  }
  completion_latch latch;
  std::vector<std::shared_ptr<timeline_sink>> sinks;
  const double start = monotonic_seconds();
  // Requests due at the same moment (a workload's t = 0, its bursts) are submitted
  // together: they start in the same step, as an offline batch does.
  auto arrival = [&](std::size_t i) { return std::max(0.0, prompts[i].arrival_s); };
  for (std::size_t i = 0; i < prompts.size();) {
    std::size_t end = i + 1;
    while (end < prompts.size() && arrival(end) == arrival(i)) ++end;
    if (const double wait = start + arrival(i) - monotonic_seconds(); wait > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }
    const double sent = monotonic_seconds();
    std::vector<submission> group;
    const auto request_of = [&](std::size_t k) {
      auto r = make_request(prompts[k], grammars.empty() ? nullptr : grammars[k]);
      // With LoRA adapters ([lora] adapters): the requests spread over them in turn.
      if (!d.lora.adapters.empty()) r.adapter = d.lora.adapters[k % d.lora.adapters.size()].first;
      return r;
    };
    for (std::size_t k = i; k < end; ++k) {
      if (prompts[k].prompt_ids.empty()) {
        (*eng)->shutdown(0.0);
        return make_error(errc::invalid_argument, "offline runs need token-id prompts");
      }
      auto sink = std::make_shared<timeline_sink>(sent, latch);
      sinks.push_back(sink);
      group.push_back({request_of(k), std::move(sink)});
    }
    if (auto ids = (*eng)->submit_all(std::move(group)); !ids) {
      // The engine refused one of them (a prompt past the context, ...), and so the whole
      // group: one by one instead, and each refusal is a failed record, as a served
      // client's error answer is.
      for (std::size_t k = i; k < end; ++k) {
        const auto& sink = sinks[k];
        if (auto id = (*eng)->submit(request_of(k), sink); !id) {
          finish_event refused;
          refused.reason = finish_reason::error;
          refused.cause = id.error();
          sink->on_finish(refused);
        }
      }
    }
    i = end;
  }
  latch.wait_for(int(sinks.size()));
  engine_run run;
  run.duration_s = monotonic_seconds() - start;
  run.snapshot = (*eng)->snapshot();
  run.mask_seconds = (*eng)->metrics().grammar_mask_seconds.counts();
  if (feed) std::tie(run.num_feed_events, run.num_feed_bytes) = feed->stop();
  (*eng)->shutdown(0.0);
  if (sampler) run.steps = sampler->take();
  for (std::size_t i = 0; i < sinks.size(); ++i) {
    run.records.push_back(sinks[i]->record(start));
    run.records.back().index = int(i);
    run.records.back().tag = prompts[i].tag;
  }
  return run;
}

}  // namespace inflight::app

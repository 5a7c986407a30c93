#include "apps/inflight/bench_serve_runner.hpp"

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdio>
#include <deque>

#include "apps/inflight/bench_report.hpp"

namespace inflight::app {
namespace asio = boost::asio;

namespace {

/// A bar redrawn in place on a terminal; a plain line per tenth of the run otherwise.
class progress_reporter {
 public:
  progress_reporter(int total, std::string label) : total_(total), label_(std::move(label)), is_tty_(::isatty(2)) {}
  void update(int num_done, long long num_tokens, double elapsed_s) {
    const double tps = elapsed_s > 0 ? double(num_tokens) / elapsed_s : 0.0;
    if (is_tty_) {
      const int width = 30, filled = total_ ? width * num_done / total_ : width;
      std::fprintf(stderr, "\r%s [%s%s] %d/%d requests, %.1f output tok/s, %.1f s ", label_.c_str(),
                   std::string(std::size_t(filled), '#').c_str(), std::string(std::size_t(width - filled), '.').c_str(),
                   num_done, total_, tps, elapsed_s);
      if (num_done == total_) std::fprintf(stderr, "\n");
      return;
    }
    const int tenth = total_ ? 10 * num_done / total_ : 10;
    if (tenth == last_tenth_ && num_done != total_) return;
    last_tenth_ = tenth;
    std::fprintf(stderr, "%s %d/%d requests done, %.1f output tok/s, %.1f s\n", label_.c_str(), num_done, total_, tps,
                 elapsed_s);
  }

 private:
  int total_;
  std::string label_;
  bool is_tty_;
  int last_tenth_ = -1;
};

class serve_runner {
 public:
  serve_runner(const client_target& t, const std::vector<bench::bench_prompt>& prompts, const serve_run_options& o)
      : target_(t), prompts_(prompts), options_(o), timer_(ioc_), progress_(int(prompts.size()), o.label) {
    run_.records.resize(prompts.size());
  }

  serve_run run() {
    start_tp_ = std::chrono::steady_clock::now();
    start_s_ = monotonic_seconds();
    schedule_next();
    ioc_.run();
    run_.duration_s = monotonic_seconds() - start_s_;
    return std::move(run_);
  }

 private:
  void schedule_next() {
    if (next_ == prompts_.size()) return;
    timer_.expires_at(start_tp_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(options_.send_times_s[next_])));
    timer_.async_wait([this](boost::system::error_code) {
      release(next_++);
      schedule_next();
    });
  }
  void release(std::size_t i) {
    if (options_.max_concurrency > 0 && num_in_flight_ >= options_.max_concurrency) return waiting_.push_back(i);
    launch(i);
  }
  void launch(std::size_t i) {
    ++num_in_flight_;
    const auto& p = prompts_[i];
    const int max_tokens = p.output_len > 0 ? p.output_len : options_.default_output_len;
    start_request(ioc_, target_, p, int(i), max_tokens, [this, i](bench::request_record r) { on_done(i, std::move(r)); });
  }
  void on_done(std::size_t i, bench::request_record r) {
    --num_in_flight_;
    r.index = int(i);
    r.start_s -= start_s_;
    r.tag = prompts_[i].tag;
    if (r.is_success) num_tokens_ += r.output_tokens;
    run_.records[i] = std::move(r);
    progress_.update(++num_done_, num_tokens_, monotonic_seconds() - start_s_);
    if (!waiting_.empty()) {
      const auto next = waiting_.front();
      waiting_.pop_front();
      launch(next);
    }
  }

  asio::io_context ioc_;
  const client_target& target_;
  const std::vector<bench::bench_prompt>& prompts_;
  const serve_run_options& options_;
  asio::steady_timer timer_;
  progress_reporter progress_;
  serve_run run_;
  std::chrono::steady_clock::time_point start_tp_;
  double start_s_ = 0.0;
  std::size_t next_ = 0;
  std::deque<std::size_t> waiting_;
  int num_in_flight_ = 0;
  int num_done_ = 0;
  long long num_tokens_ = 0;
};

}  // namespace

serve_run run_serving(const client_target& target, const std::vector<bench::bench_prompt>& prompts,
                      const serve_run_options& options) {
  serve_runner runner(target, prompts, options);
  return runner.run();
}

}  // namespace inflight::app

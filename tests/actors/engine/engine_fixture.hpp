#pragma once
// Helpers for tests that drive the real engine (real actors, CPU backend).

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "actors/engine/engine.hpp"
#include "tests/shared_data.hpp"

namespace inflight::test {

/// Records a request's events; wait() blocks until it finished.
class collect_sink final : public request_sink {
 public:
  void on_token(const token_event& ev) override {
    std::lock_guard lock(mutex_);
    text_ += ev.text;
    tokens_.insert(tokens_.end(), ev.token_ids.begin(), ev.token_ids.end());
    ++num_events_;
    cv_.notify_all();
  }
  void on_finish(const finish_event& ev) override {
    std::lock_guard lock(mutex_);
    text_ += ev.text;
    finish_ = ev;
    ++num_finishes_;
    cv_.notify_all();
  }
  bool wait(double seconds = 60.0) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return num_finishes_ > 0; });
  }
  /// Until `n` token events came (or the request finished); false on timeout.
  bool wait_for_events(int n, double seconds = 60.0) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, std::chrono::duration<double>(seconds),
                        [&] { return num_events_ >= n || num_finishes_ > 0; });
  }
  std::string text() const { std::lock_guard lock(mutex_); return text_; }
  std::vector<token_id> tokens() const { std::lock_guard lock(mutex_); return tokens_; }
  finish_event finish() const { std::lock_guard lock(mutex_); return finish_; }
  int num_finishes() const { std::lock_guard lock(mutex_); return num_finishes_; }
  int num_events() const { std::lock_guard lock(mutex_); return num_events_; }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::string text_;
  std::vector<token_id> tokens_;
  finish_event finish_;
  int num_finishes_ = 0;
  int num_events_ = 0;
};

/// stories260K deployment with the built plugins; empty model path when data is missing.
inline deployment stories_deployment(const std::string& policy = "splitfuse", int budget = 256, int kv_blocks = 256,
                                     int max_num_seqs = 64) {
  deployment d;
  d.model.path = shared_file("models/stories260K/stories260K.bin").string();
  d.model.tokenizer = shared_file("models/stories260K/tok512.bin").string();
  d.engine.kv_blocks = kv_blocks;
  d.engine.max_num_batched_tokens = budget;
  d.engine.max_num_seqs = max_num_seqs;
  d.engine.threads = 1;
  d.scheduler.policy = policy;
  d.scheduler.plugin_dir = INFLIGHT_TEST_PLUGIN_DIR;
  return d;
}

inline std::unique_ptr<engine> start_engine(const deployment& d) {
  auto model = load_model(d.model);
  REQUIRE(model.has_value());
  auto eng = engine::start(d, std::move(*model));
  if (!eng) FAIL(eng.error().message);
  return std::move(*eng);
}

/// Blocks of finished requests go back with the scheduler's next kv request, a
/// moment after the finish reaches the sink: waits (bounded, generously) until the
/// published snapshot shows every block free. False means blocks leaked.
inline bool all_blocks_return(const engine& eng, double seconds = 30.0) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    const auto snap = eng.snapshot();
    if (snap.num_free_blocks == snap.num_blocks) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// Polls `done` until it holds (true) or `seconds` pass (false).
inline bool wait_until(const std::function<bool()>& done, double seconds = 30.0) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

/// Random weights of a small shape with the byte-level tokenizer: an engine that needs
/// no shared data.
inline deployment dummy_deployment() {
  deployment d;
  d.model.format = "dummy";
  auto& s = d.model.dummy;
  s.hidden_size = 64;
  s.intermediate_size = 96;
  s.num_layers = 2;
  s.num_heads = 4;
  s.num_kv_heads = 2;
  s.max_position = 256;
  d.engine.kv_blocks = 64;
  d.engine.max_num_seqs = 8;
  d.engine.threads = 1;
  d.scheduler.plugin_dir = INFLIGHT_TEST_PLUGIN_DIR;
  return d;
}

inline generate_request greedy_request(const engine& eng, const std::string& prompt, int max_tokens) {
  generate_request r;
  r.prompt = eng.model().tok->encode(prompt, true);
  r.params.temperature = 0.0f;
  r.params.max_tokens = max_tokens;
  return r;
}

}  // namespace inflight::test

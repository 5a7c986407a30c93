#pragma once
/// The bound on requests that wait to start: how many (server.max_waiting_requests)
/// and how many prompt tokens they hold (server.max_waiting_tokens). A request enters
/// when it is submitted and leaves when the scheduler first runs it or when it finishes
/// without having run (cancelled, timed out in the queue, refused). Thread-safe: any
/// thread submits, the scheduler releases; a refusal never leaves a count behind.

#include <atomic>
#include <cstdint>

#include "core/base/error.hpp"

namespace inflight {

class admission_gate {
 public:
  struct limits {
    int max_requests = 256;
    std::int64_t max_tokens = 1 << 20;
  };

  explicit admission_gate(limits l) : limits_(l) {}

  /// Counts a request of `num_prompt_tokens`, or refuses it: queue_full while either
  /// bound is reached, invalid_argument for a prompt that could never fit max_tokens.
  result<void> try_enter(int num_prompt_tokens);
  /// The request started or finished before starting: it no longer waits.
  void leave(int num_prompt_tokens);

  int num_requests() const { return num_requests_; }
  std::int64_t num_tokens() const { return num_tokens_; }
  const limits& bounds() const { return limits_; }

 private:
  limits limits_;
  std::atomic<int> num_requests_{0};
  std::atomic<std::int64_t> num_tokens_{0};
};

}  // namespace inflight

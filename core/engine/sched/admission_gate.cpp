#include "core/engine/sched/admission_gate.hpp"

#include <string>

namespace inflight {

result<void> admission_gate::try_enter(int num_prompt_tokens) {
  const std::int64_t n = num_prompt_tokens;
  if (n > limits_.max_tokens) {
    return make_error(errc::invalid_argument, "the prompt has " + std::to_string(n) +
                                                  " tokens, more than a whole waiting queue may hold "
                                                  "(server.max_waiting_tokens = " +
                                                  std::to_string(limits_.max_tokens) + ")");
  }
  // Add first, then check what we added to: concurrent callers never overshoot a bound
  // (at worst one is refused while another's increment is being undone).
  const int before = num_requests_.fetch_add(1);
  if (before >= limits_.max_requests) {
    num_requests_.fetch_sub(1);
    return make_error(errc::queue_full, "the waiting queue is full: " + std::to_string(before) +
                                            " requests wait to start (server.max_waiting_requests = " +
                                            std::to_string(limits_.max_requests) + ")");
  }
  const std::int64_t tokens_before = num_tokens_.fetch_add(n);
  if (tokens_before + n > limits_.max_tokens) {
    num_tokens_.fetch_sub(n);
    num_requests_.fetch_sub(1);
    return make_error(errc::queue_full, "the waiting queue is full: requests waiting to start hold " +
                                            std::to_string(tokens_before) + " prompt tokens and this one has " +
                                            std::to_string(n) + " (server.max_waiting_tokens = " +
                                            std::to_string(limits_.max_tokens) + ")");
  }
  return {};
}

void admission_gate::leave(int num_prompt_tokens) {
  num_tokens_.fetch_sub(num_prompt_tokens);
  num_requests_.fetch_sub(1);
}

}  // namespace inflight

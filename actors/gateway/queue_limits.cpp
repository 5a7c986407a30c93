#include "actors/gateway/queue_limits.hpp"

namespace inflight::gateway {

std::optional<api_error> check_queue_capacity(const server_settings& server, int num_requests,
                                              std::int64_t num_prompt_tokens, const std::string& param) {
  if (num_requests > server.max_waiting_requests) {
    return bad_request("this request needs " + std::to_string(num_requests) +
                           " places in the waiting queue (each choice, input or document waits as a request of its "
                           "own), but the queue holds " + std::to_string(server.max_waiting_requests) +
                           " (server.max_waiting_requests): it could never be queued",
                       param, "exceeds_queue_capacity");
  }
  if (num_prompt_tokens > server.max_waiting_tokens) {
    return bad_request("this request's queued requests hold " + std::to_string(num_prompt_tokens) +
                           " prompt tokens in all, but the waiting queue holds " +
                           std::to_string(server.max_waiting_tokens) +
                           " (server.max_waiting_tokens): it could never be queued",
                       param, "exceeds_queue_capacity");
  }
  return std::nullopt;
}

}  // namespace inflight::gateway

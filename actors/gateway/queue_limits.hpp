#pragma once
/// Requests the engine's waiting queue could never hold. Every choice of a completion,
/// input of an embedding and document of a rerank waits in the queue as an engine
/// request of its own; a request needing more places (server.max_waiting_requests) or
/// more prompt tokens (server.max_waiting_tokens) than the whole queue has would be
/// refused with 429 even on an idle server, and a client told to retry later would
/// retry forever. It is a 400 that says why; 429 stays for a queue that is full now.

#include <cstdint>
#include <optional>
#include <string>

#include "actors/gateway/errors.hpp"
#include "core/config/deployment.hpp"

namespace inflight::gateway {

/// A 400 (code "exceeds_queue_capacity", naming `param`) when `num_requests` engine
/// requests holding `num_prompt_tokens` prompt tokens in all could never wait together.
std::optional<api_error> check_queue_capacity(const server_settings& server, int num_requests,
                                              std::int64_t num_prompt_tokens, const std::string& param);

}  // namespace inflight::gateway

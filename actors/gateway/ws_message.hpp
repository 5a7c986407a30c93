#pragma once
/// Client messages on /v1/ws (protocol: docs/websocket.md), parsed and checked without a
/// socket or an engine: what ws_session does with a frame before anything runs, so that
/// the whole decision can be tested and fuzzed on its own.

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/engine_api.hpp"
#include "actors/gateway/errors.hpp"
#include "actors/gateway/openai_request.hpp"
#include "actors/gateway/served_model.hpp"

namespace inflight::gateway {

enum class ws_message_type { generate, rerank, embed, cancel };

/// A frame that names a known type and a valid id.
struct ws_message {
  ws_message_type type = ws_message_type::generate;
  nlohmann::json id;    ///< a string or an integer, echoed in every reply about it
  std::string key;      ///< the id as compact JSON: "7" and "\"7\"" are different requests
  nlohmann::json body;  ///< the whole message (generate, rerank and embed read their fields from it)
  /// The message with its key order, when it carries messages (the chat template sees it).
  nlohmann::ordered_json ordered_body;
};

/// A frame that cannot be served, and the id its error is sent under (null when the
/// frame has no usable id).
struct ws_message_error {
  nlohmann::json id;
  api_error error;
};

/// Parses one frame: JSON text with a string or integer `id` and a `type` of "generate",
/// "rerank", "embed" or "cancel". Binary frames, malformed JSON and bad ids or types are errors.
std::expected<ws_message, ws_message_error> try_parse_ws_message(const std::string& text, bool is_text);

/// Validates a generate message's body as the HTTP API does: one prompt, n = 1, always
/// streamed. It runs as a completion_call, as an HTTP request does.
api_result<openai_request> try_parse_ws_generate(const nlohmann::json& body, const served_model& model,
                                                 const nlohmann::ordered_json& ordered = nullptr);

/// {"type": "error", "id": id, "error": {...}}: how every refusal is sent. A load refusal
/// (429 or 503, as HTTP's Retry-After) carries "retry_after_s": the same id may be sent again.
nlohmann::json ws_error_message(const nlohmann::json& id, const api_error& e, int retry_after_s = 1);

/// {"type": "token", "id", "text", "token_ids", "index"[, "logprobs"]}: `index` tokens of
/// the request came before it; `logprobs` (chat content entries) only when not null.
nlohmann::json ws_token_message(const nlohmann::json& id, const std::string& text, const std::vector<token_id>& token_ids,
                                int index, const nlohmann::json& logprobs);
/// {"type": "done", "id", "finish_reason", "usage", "timings"[, "message"]}: how a
/// generation ends (`finish_reason` from the one vocabulary, finish_name()).
nlohmann::json ws_done_message(const nlohmann::json& id, const char* finish_reason, const finish_event& ev);

}  // namespace inflight::gateway

#pragma once
/// Routing, and the endpoints answered without an engine call: /health, /metrics,
/// /v1/models, /version, /tokenize, /detokenize, and every 404 / 405.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"
#include "actors/gateway/gateway_state.hpp"

namespace inflight::gateway {

/// A complete HTTP answer.
struct http_reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string allow;  ///< the Allow header of a 405
};

http_reply json_reply(int status, const nlohmann::json& body);
http_reply error_reply(const api_error& e);

enum class route_kind {
  completion,  ///< POST /v1/completions
  chat,        ///< POST /v1/chat/completions
  websocket,   ///< GET /v1/ws (an upgrade)
  engine_events,  ///< GET /v1/engine/events (a long-lived SSE stream; events_session)
  rerank,      ///< POST /v1/rerank, /rerank, /v2/rerank
  score,       ///< POST /v1/score, /score
  embeddings,  ///< POST /v1/embeddings, /embeddings
  other,       ///< answered by answer()
};

/// The path of a request target, without its query string.
std::string_view target_path(std::string_view target);
/// The value of query parameter `name` in a request target, percent-decoded ('+' is a
/// space); none when absent (or not well formed).
std::optional<std::string> query_param(std::string_view target, std::string_view name);

route_kind classify(std::string_view method, std::string_view path);

/// Whether `path` answers without an API key when keys are configured: /health, the
/// web UI's page and files (its API calls need the key), and /metrics with
/// server.metrics_open.
bool is_open_route(std::string_view path, const server_settings& settings);

/// The 401 of a request without a valid key (nullopt: let it in): keys are configured,
/// the route is not open, and `authorization` (the header, if any) carries none of them.
std::optional<api_error> check_api_key(const gateway_state& state, std::string_view path,
                                       std::optional<std::string_view> authorization);

/// Answers a request of route_kind::other (unknown routes: 404, known routes under
/// another method: 405).
http_reply answer(gateway_state& state, std::string_view method, std::string_view path, const std::string& body);

}  // namespace inflight::gateway

#pragma once
/// Routing, and the endpoints answered without an engine call: /health, /metrics,
/// /v1/models, /version, /tokenize, /detokenize, stored responses, and every 404 / 405.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"
#include "actors/gateway/gateway_state.hpp"
#include "actors/gateway/http_reply.hpp"

namespace inflight::gateway {

/// What a request asks for, from its method and path (classify()).
enum class route_kind {
  completion,     ///< POST /v1/completions
  chat,           ///< POST /v1/chat/completions
  websocket,      ///< GET /v1/ws (an upgrade; without one, 426)
  engine_events,  ///< GET /v1/engine/events (a long-lived SSE stream; events_session)
  rerank,         ///< POST /v1/rerank, /rerank, /v2/rerank
  score,          ///< POST /v1/score, /score
  embeddings,     ///< POST /v1/embeddings, /embeddings
  messages,       ///< POST /v1/messages (Anthropic's Messages API; anthropic_call.hpp)
  responses,      ///< POST /v1/responses (responses_call.hpp)
  // answered at once by answer():
  health,         ///< GET /health
  metrics,        ///< GET /metrics
  models,         ///< GET /v1/models
  model,          ///< GET /v1/models/{name}
  model_action,   ///< POST /v1/models/{name}/load, /unload (several models: model_table)
  lora_load,      ///< POST /v1/load_lora_adapter (vLLM's body: lora_name, lora_path)
  lora_unload,    ///< POST /v1/unload_lora_adapter (lora_name)
  version,        ///< GET /version
  tokenize,       ///< POST /tokenize, /v1/tokenize
  detokenize,     ///< POST /detokenize, /v1/detokenize
  count_tokens,   ///< POST /v1/messages/count_tokens (Anthropic)
  stored_response,  ///< GET, DELETE /v1/responses/{id}
  other,          ///< no route: a file of the web UI, a 405 for a known path, else 404
};

/// The routes whose answers, errors included, are in Anthropic's shape (anthropic_call.hpp).
inline bool is_messages_route(route_kind kind) {
  return kind == route_kind::messages || kind == route_kind::count_tokens;
}

/// Who may call a route when API keys are configured.
enum class route_access {
  key,      ///< a valid key
  open,     ///< anyone
  metrics,  ///< anyone with server.metrics_open, else a valid key
};

/// One route: every answer the gateway gives by method and path comes from the one
/// table of these (routes.cpp): classify(), the 405s and their Allow header, the open
/// routes and the endpoints answer() serves.
struct route {
  std::string_view path;    ///< the path; a prefix of paths when it ends in '/'
  std::string_view method;  ///< "GET", "POST" or "DELETE"
  route_kind kind;
  route_access access = route_access::key;
  bool takes_head = false;  ///< a GET route that answers HEAD too
};

/// The path of a request target, without its query string.
std::string_view target_path(std::string_view target);
/// The value of query parameter `name` in a request target, percent-decoded ('+' is a
/// space); none when absent (or not well formed).
std::optional<std::string> query_param(std::string_view target, std::string_view name);

/// The route a request takes; route_kind::other when none takes its method and path.
route_kind classify(std::string_view method, std::string_view path);

/// Whether `path` answers without an API key when keys are configured: /health, the
/// web UI's page and files (its API calls need the key), and /metrics with
/// server.metrics_open.
bool is_open_route(std::string_view path, const server_settings& settings);

/// The 401 of a request without a valid key (nullopt: let it in): keys are configured,
/// the route is not open, and `authorization` (the header, if any) carries none of them.
std::optional<api_error> check_api_key(const gateway_state& state, std::string_view path,
                                       std::optional<std::string_view> authorization);

/// Answers a request that a session does not serve itself: the routes answered at once,
/// GET /v1/ws without an upgrade (426), and for route_kind::other a file of the web UI,
/// a 405 (a known path under another method) or a 404.
http_reply answer(gateway_state& state, route_kind kind, std::string_view method, std::string_view path,
                  const std::string& body);

}  // namespace inflight::gateway

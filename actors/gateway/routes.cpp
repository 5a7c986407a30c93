#include "actors/gateway/routes.hpp"

#include <algorithm>

#include "actors/gateway/anthropic_call.hpp"
#include "actors/gateway/chat_request.hpp"
#include "actors/gateway/json_fields.hpp"
#include "actors/gateway/openai_request.hpp"
#include "actors/gateway/openai_response.hpp"
#include "actors/gateway/responses_call.hpp"
#include "actors/gateway/web_ui.hpp"

namespace inflight::gateway {

using nlohmann::json;

std::string_view target_path(std::string_view target) { return target.substr(0, target.find('?')); }

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      const int hi = hex_value(text[i + 1]), lo = hex_value(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> query_param(std::string_view target, std::string_view name) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    const auto eq = pair.find('=');
    const auto key = percent_decode(pair.substr(0, eq));
    if (!key || *key != name) continue;
    return eq == std::string_view::npos ? std::optional<std::string>("") : percent_decode(pair.substr(eq + 1));
  }
  return std::nullopt;
}

namespace {

/// Every route, once.
constexpr route routes[] = {
    {"/v1/completions", "POST", route_kind::completion},
    {"/v1/chat/completions", "POST", route_kind::chat},
    {"/v1/ws", "GET", route_kind::websocket, route_access::key, true},
    {"/v1/engine/events", "GET", route_kind::engine_events},
    {"/v1/rerank", "POST", route_kind::rerank},
    {"/rerank", "POST", route_kind::rerank},
    {"/v2/rerank", "POST", route_kind::rerank},
    {"/v1/score", "POST", route_kind::score},
    {"/score", "POST", route_kind::score},
    {"/v1/embeddings", "POST", route_kind::embeddings},
    {"/embeddings", "POST", route_kind::embeddings},
    {"/v1/messages", "POST", route_kind::messages},
    {"/v1/messages/count_tokens", "POST", route_kind::count_tokens},
    {"/v1/responses", "POST", route_kind::responses},
    {"/v1/responses/", "GET", route_kind::stored_response},
    {"/v1/responses/", "DELETE", route_kind::stored_response},
    {"/health", "GET", route_kind::health, route_access::open, true},
    {"/metrics", "GET", route_kind::metrics, route_access::metrics, true},
    {"/v1/models", "GET", route_kind::models, route_access::key, true},
    {"/v1/models/", "GET", route_kind::model, route_access::key, true},
    {"/v1/models/", "POST", route_kind::model_action},
    {"/v1/load_lora_adapter", "POST", route_kind::lora_load},
    {"/v1/unload_lora_adapter", "POST", route_kind::lora_unload},
    {"/version", "GET", route_kind::version, route_access::key, true},
    {"/tokenize", "POST", route_kind::tokenize},
    {"/v1/tokenize", "POST", route_kind::tokenize},
    {"/detokenize", "POST", route_kind::detokenize},
    {"/v1/detokenize", "POST", route_kind::detokenize},
};

bool is_prefix(const route& r) { return r.path.ends_with('/'); }

bool has_path(const route& r, std::string_view path) {
  return is_prefix(r) ? path.starts_with(r.path) : path == r.path;
}

bool takes_method(const route& r, std::string_view method) {
  return method == r.method || (method == "HEAD" && r.takes_head);
}

/// The route of a path, whatever the method: the first row that has it.
const route* route_of(std::string_view path) {
  for (const auto& r : routes)
    if (has_path(r, path)) return &r;
  return nullptr;
}

}  // namespace

route_kind classify(std::string_view method, std::string_view path) {
  for (const auto& r : routes)
    if (has_path(r, path) && takes_method(r, method)) return r.kind;
  return route_kind::other;
}

namespace {

/// 200 while requests can be served: {"status": "ok"}, or "degraded" with the last
/// failure when a recent step failed; 503 while shutting down, or once
/// engine.unhealthy_after_failed_steps steps failed in a row (until one succeeds).
http_reply health_reply(gateway_state& state) {
  if (state.is_shutting_down()) return error_reply(shutting_down());
  const auto h = state.eng().health();
  if (!h.is_healthy) {
    const std::string why = h.is_stopped ? "the engine has stopped"
                                         : "the last " + std::to_string(h.num_consecutive_failed_steps) +
                                               " engine steps failed (engine.unhealthy_after_failed_steps); last: " +
                                               h.last_step_error;
    return error_reply(to_api_error({errc::unavailable, why}));
  }
  json body = {{"status", h.num_consecutive_failed_steps > 0 ? "degraded" : "ok"},
               {"failed_steps", h.num_failed_steps}, {"consecutive_failed_steps", h.num_consecutive_failed_steps}};
  if (!h.last_step_error.empty()) body["last_step_error"] = h.last_step_error;
  return json_reply(200, body);
}

http_reply model_by_name(gateway_state& state, std::string_view name) {
  const auto list = models_list(state.model());
  for (const auto& m : list["data"])
    if (m["id"] == name) return json_reply(200, m);
  return error_reply(not_found("The model `" + std::string(name) + "` does not exist", "model_not_found"));
}

http_reply tokenize_reply(gateway_state& state, const std::string& text) {
  auto body = try_parse_json(text);
  if (!body) return error_reply(body.error());
  const auto ordered = body->contains("messages") ? parse_ordered_body(text) : nlohmann::ordered_json();
  auto ids = try_parse_tokenize(*body, state.model(), ordered);
  if (!ids) return error_reply(ids.error());
  return json_reply(200, {{"tokens", *ids}, {"count", ids->size()}, {"max_model_len", state.model().max_context}});
}

http_reply detokenize_reply(gateway_state& state, const std::string& text) {
  auto body = try_parse_json(text);
  if (!body) return error_reply(body.error());
  auto ids = try_parse_detokenize(*body, state.model());
  if (!ids) return error_reply(ids.error());
  return json_reply(200, {{"prompt", detokenize(state.model(), *ids)}});
}

/// POST /v1/load_lora_adapter and /v1/unload_lora_adapter, as vLLM answers them: 200 with
/// a line of text; 400 for a bad body, a name taken or an adapter that does not fit;
/// 404 to unload an adapter that is not loaded. A load reads the adapter before it answers.
http_reply lora_reply(gateway_state& state, bool is_load, const std::string& text) {
  if (!state.eng().settings().lora.runtime_updates)
    return error_reply(bad_request("loading and unloading LoRA adapters at run time is off on this server "
                                   "(lora.runtime_updates = false)", "", "invalid_request"));
  auto body = try_parse_json(text);
  if (!body) return error_reply(body.error());
  if (!body->is_object()) return error_reply(bad_request("the request body must be a JSON object"));
  const auto read_name = [&](const char* key, std::string& out) -> opt_error {
    if (auto e = read_string(*body, key, out)) return e;
    if (out.empty()) return bad_request(std::string(key) + " must be a non-empty string", key);
    return {};
  };
  std::string name, path;
  if (auto e = read_name("lora_name", name)) return error_reply(*e);
  const auto& m = state.model();
  if (!is_load) {
    if (auto ok = state.eng().unload_lora_adapter(name); !ok) return error_reply(to_api_error(ok.error()));
    return {200, "text/plain; charset=utf-8", "Success: LoRA adapter '" + name + "' removed successfully.", {}};
  }
  if (auto e = read_name("lora_path", path)) return error_reply(*e);
  if (name == m.name || std::find(m.aliases.begin(), m.aliases.end(), name) != m.aliases.end())
    return error_reply(bad_request("lora_name '" + name + "' is the name of the model itself", "lora_name"));
  if (auto ok = state.eng().load_lora_adapter(name, path); !ok) {  // a file that is no adapter: the caller's
    const auto& e = ok.error();
    return error_reply(e.code == errc::unsupported ? to_api_error(e) : bad_request(e.message, "lora_path"));
  }
  return {200, "text/plain; charset=utf-8", "Success: LoRA adapter '" + name + "' added successfully.", {}};
}

}  // namespace

bool is_open_route(std::string_view path, const server_settings& settings) {
  if (is_ui_path(path)) return true;
  const route* r = route_of(path);
  if (r == nullptr) return false;
  return r->access == route_access::open || (r->access == route_access::metrics && settings.metrics_open);
}

std::optional<api_error> check_api_key(const gateway_state& state, std::string_view path,
                                       std::optional<std::string_view> authorization) {
  if (state.keys().is_open() || is_open_route(path, state.settings())) return std::nullopt;
  if (state.keys().accepts_header(authorization)) return std::nullopt;
  return unauthorized(authorization.has_value());
}

http_reply answer(gateway_state& state, route_kind kind, std::string_view method, std::string_view path,
                  const std::string& body) {
  switch (kind) {
    case route_kind::health: return health_reply(state);
    case route_kind::metrics: return {200, "text/plain; version=0.0.4; charset=utf-8", state.eng().render_metrics(), {}};
    case route_kind::models: return json_reply(200, models_list(state.model()));
    case route_kind::model: return model_by_name(state, path.substr(std::string_view("/v1/models/").size()));
    case route_kind::version: return json_reply(200, {{"version", state.version()}});
    case route_kind::tokenize: return tokenize_reply(state, body);
    case route_kind::detokenize: return detokenize_reply(state, body);
    case route_kind::count_tokens: return count_tokens_reply(state, body);
    case route_kind::stored_response:
      return answer_stored_response(state, method, path.substr(std::string_view("/v1/responses/").size()));
    case route_kind::model_action:
      return error_reply(bad_request("This server serves one model, always loaded: loading and unloading are for "
                                     "servers of several models ([[models]], serve --model)", "", "invalid_request"));
    case route_kind::lora_load: return lora_reply(state, true, body);
    case route_kind::lora_unload: return lora_reply(state, false, body);
    case route_kind::websocket:
      return error_reply(api_error{426, "invalid_request_error", "/v1/ws takes a WebSocket upgrade", {}, "upgrade_required"});
    default: break;
  }
  if (method == "GET" || method == "HEAD") {
    if (auto ui = try_answer_ui(state, path)) return std::move(*ui);
  }
  for (const auto& r : routes) {
    if (!is_prefix(r) && r.path == path) {
      auto e = method_not_allowed(std::string(method) + " is not allowed on " + std::string(path) + " (use " +
                                  std::string(r.method) + ")");
      auto reply = error_reply(e);
      reply.allow = std::string(r.method);
      return reply;
    }
  }
  return error_reply(not_found("no route " + std::string(method) + " " + std::string(path), "route_not_found"));
}

}  // namespace inflight::gateway

#pragma once
/// The models one server serves ([[models]]): each has its gateway_state (its engine,
/// tokenizer, chat template, stored responses), and a request chooses one by its `model`
/// field. With one model nothing is chosen: its parsers check the name as they always did.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "actors/gateway/errors.hpp"
#include "actors/model_control.hpp"
#include "actors/gateway/gateway_state.hpp"
#include "actors/gateway/http_reply.hpp"
#include "actors/gateway/routes.hpp"

namespace inflight::gateway {

class model_table {
 public:
  /// `aliases`: other names that choose it besides its served name.
  void add(std::unique_ptr<gateway_state> state, std::vector<std::string> aliases);

  /// The pool that loads and unloads the models (none: every model is always loaded).
  void set_control(model_control* control) { control_ = control; }
  model_control* control() const { return control_; }

  std::size_t size() const { return entries_.size(); }
  /// The first model: the one a request without a `model` field gets.
  gateway_state& first() { return *entries_.front().state; }
  std::vector<gateway_state*> all() const;
  /// The model `name` (its served name or an alias) chooses; null when none does.
  gateway_state* find(std::string_view name) const;

  /// The model a request body's `model` field chooses: the first one when the body has
  /// no such field (or is not JSON: its parser says so), a 404 model_not_found naming the
  /// served models when the name is unknown. One model: always it. With a pool, the
  /// body's `keep_alive` (Ollama's: seconds or "5m", 0 = unload when idle, negative =
  /// keep) becomes the model's; a bad one is a 400.
  api_result<gateway_state*> for_body(const std::string& body) const;
  /// The same for a body already parsed (a WebSocket message's).
  api_result<gateway_state*> for_json(const nlohmann::json& body) const;

  /// "a, b (alias c)": the served names, for messages.
  std::string names() const;

  /// The server-wide answers when several models are served: GET /v1/models (each model),
  /// /v1/models/{name}, /metrics (every engine's page, merged), /health (unhealthy when
  /// any model is). None for other routes.
  std::optional<http_reply> try_answer(route_kind kind, std::string_view path) const;

  /// POST /v1/models/{name}/load or /unload: the model and the action, or the error
  /// reply (unknown model or action, no pool).
  struct action {
    std::string name;  ///< the served name (an alias is resolved)
    bool is_load = true;
  };
  api_result<action> parse_action(std::string_view path) const;

 private:
  struct entry {
    std::unique_ptr<gateway_state> state;
    std::vector<std::string> aliases;
  };
  std::vector<entry> entries_;
  model_control* control_ = nullptr;
};

}  // namespace inflight::gateway

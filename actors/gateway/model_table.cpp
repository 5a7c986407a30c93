#include "actors/gateway/model_table.hpp"

#include <algorithm>
#include <cmath>

#include "actors/gateway/openai_response.hpp"
#include "config/units.hpp"
#include "core/engine/metrics/prometheus_merge.hpp"

namespace inflight::gateway {

using json = nlohmann::json;

void model_table::add(std::unique_ptr<gateway_state> state, std::vector<std::string> aliases) {
  entries_.push_back({std::move(state), std::move(aliases)});
}

std::vector<gateway_state*> model_table::all() const {
  std::vector<gateway_state*> out;
  for (const auto& e : entries_) out.push_back(e.state.get());
  return out;
}

gateway_state* model_table::find(std::string_view name) const {
  for (const auto& e : entries_) {
    if (e.state->model().name == name) return e.state.get();
    if (std::find(e.aliases.begin(), e.aliases.end(), name) != e.aliases.end()) return e.state.get();
    const auto adapters = e.state->model().adapter_names();
    if (std::find(adapters.begin(), adapters.end(), name) != adapters.end()) return e.state.get();
  }
  return nullptr;
}

std::string model_table::names() const {
  std::string out;
  for (const auto& e : entries_) {
    out += (out.empty() ? "`" : ", `") + e.state->model().name + "`";
    for (const auto& a : e.aliases) out += " (alias `" + a + "`)";
  }
  return out;
}

api_result<gateway_state*> model_table::for_body(const std::string& body) const {
  if (entries_.size() == 1) return entries_.front().state.get();
  return for_json(json::parse(body, nullptr, false));
}

api_result<gateway_state*> model_table::for_json(const json& j) const {
  gateway_state* first = entries_.front().state.get();
  if (entries_.size() == 1) return first;
  if (!j.is_object() || !j.contains("model") || !j["model"].is_string()) return first;
  const auto name = j["model"].get<std::string>();
  if (auto* s = find(name)) {
    if (control_ == nullptr || !j.contains("keep_alive") || j["keep_alive"].is_null()) return s;
    const auto& k = j["keep_alive"];
    result<double> seconds = make_error(errc::invalid_argument, "");
    if (k.is_number()) seconds = k.get<double>() < 0 ? -1.0 : k.get<double>();
    if (k.is_string()) seconds = config::parse_duration(k.get<std::string>());
    if (!seconds || !std::isfinite(*seconds))
      return std::unexpected(bad_request("keep_alive must be a duration: seconds, or a string like \"5m\" "
                                         "(0 = unload when idle, negative = keep loaded)", "keep_alive"));
    control_->set_keep_alive(s->model().name, *seconds);
    return s;
  }
  return std::unexpected(not_found("The model `" + name + "` does not exist (this server serves " + names() + ")",
                                   "model_not_found"));
}

namespace {

json model_object(const gateway_state& s, const model_control* control) {
  json m = models_list(s.model())["data"][0];
  if (control == nullptr) return m;
  const auto st = control->status(s.model().name);
  m["state"] = to_string(st.state);
  if (st.size_bytes > 0) m["size_bytes"] = st.size_bytes;
  m["keep_alive"] = st.keep_alive_s;
  m["num_requests"] = st.num_requests;
  if (!st.error.empty()) m["error"] = st.error;
  return m;
}

http_reply health_of_all(const std::vector<gateway_state*>& states, const model_control* control) {
  json models = json::object();
  bool is_degraded = false;
  for (auto* s : states) {
    const auto h = s->eng().health();
    if (s->is_shutting_down()) return error_reply(shutting_down());
    if (!h.is_healthy) {
      const std::string why = "model `" + s->model().name + "`: " +
                              (h.is_stopped ? std::string("its engine has stopped")
                                            : "the last " + std::to_string(h.num_consecutive_failed_steps) +
                                                  " engine steps failed; last: " + h.last_step_error);
      return error_reply(to_api_error({errc::unavailable, why}));
    }
    is_degraded = is_degraded || h.num_consecutive_failed_steps > 0;
    models[s->model().name] = {{"status", h.num_consecutive_failed_steps > 0 ? "degraded" : "ok"},
                               {"failed_steps", h.num_failed_steps}};
    if (control != nullptr) {
      // A model whose load failed serves no request until a load succeeds: the server
      // serves on (the others), degraded.
      const auto st = control->status(s->model().name);
      models[s->model().name]["state"] = to_string(st.state);
      if (st.state == model_state::failed) {
        is_degraded = true;
        models[s->model().name]["status"] = "degraded";
        models[s->model().name]["error"] = st.error;
      }
    }
  }
  return json_reply(200, {{"status", is_degraded ? "degraded" : "ok"}, {"models", models}});
}

}  // namespace

std::optional<http_reply> model_table::try_answer(route_kind kind, std::string_view path) const {
  if (entries_.size() < 2) return std::nullopt;
  switch (kind) {
    case route_kind::models: {
      json data = json::array();
      for (const auto& e : entries_) {
        data.push_back(model_object(*e.state, control_));
        auto aliases = e.aliases;  // LoRA adapters too: an entry's names that choose it
        for (const auto& a : e.state->model().adapter_names()) aliases.push_back(a);
        for (const auto& a : aliases) {
          auto alias = model_object(*e.state, control_);
          alias["id"] = a;
          alias["parent"] = e.state->model().name;  // vLLM's way of naming what an entry stands for
          data.push_back(alias);
        }
      }
      return json_reply(200, {{"object", "list"}, {"data", data}});
    }
    case route_kind::model: {
      const auto name = path.substr(std::string_view("/v1/models/").size());
      if (auto* s = find(name)) {
        auto m = model_object(*s, control_);
        m["id"] = std::string(name);
        return json_reply(200, m);
      }
      return error_reply(not_found("The model `" + std::string(name) + "` does not exist", "model_not_found"));
    }
    case route_kind::metrics: {
      std::vector<metrics_page> pages;
      for (const auto& e : entries_) pages.push_back({e.state->eng().render_metrics(), "", ""});  // each has model_name
      return http_reply{200, "text/plain; version=0.0.4; charset=utf-8", merge_metrics_pages(pages), {}};
    }
    case route_kind::health:
      return health_of_all(all(), control_);
    default:
      return std::nullopt;
  }
}

api_result<model_table::action> model_table::parse_action(std::string_view path) const {
  auto rest = path.substr(std::string_view("/v1/models/").size());
  const auto slash = rest.rfind('/');
  const auto verb = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
  if (verb != "load" && verb != "unload")
    return std::unexpected(not_found("POST /v1/models/{name}/load or /v1/models/{name}/unload", "not_found"));
  const std::string name(rest.substr(0, slash));
  auto* s = find(name);
  if (s == nullptr)
    return std::unexpected(not_found("The model `" + name + "` does not exist (this server serves " + names() + ")",
                                     "model_not_found"));
  if (control_ == nullptr)
    return std::unexpected(bad_request("This server keeps every model loaded: loading and unloading are for servers "
                                       "of several models ([[models]], serve --model)", "", "invalid_request"));
  return action{s->model().name, verb == "load"};
}

}  // namespace inflight::gateway

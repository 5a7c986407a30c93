#include "actors/gateway/anthropic_request.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <string_view>
#include <utility>

#include "actors/gateway/anthropic_messages.hpp"
#include "actors/gateway/json_fields.hpp"

namespace inflight::gateway {

using json = nlohmann::ordered_json;  // the client's key order

namespace {

/// Anthropic's sampling fields, the same in a chat body, and chat fields a client of this
/// server may give beside the extensions (chat_extension_fields).
constexpr std::array<const char*, 5> same_in_chat = {"temperature", "top_p", "top_k", "response_format",
                                                     "reasoning_effort"};

opt_error translate_stop(const json& body, json& chat) {
  const json* stops = field(body, "stop_sequences");
  if (!stops) return {};
  if (!stops->is_array()) return bad_request("stop_sequences must be a list of strings", "stop_sequences");
  if (stops->size() > 16) return bad_request("stop_sequences may hold at most 16 strings", "stop_sequences");
  for (const auto& s : *stops) {
    if (!s.is_string()) return bad_request("stop_sequences must be a list of strings", "stop_sequences");
    if (s.get_ref<const std::string&>().empty())
      return bad_request("stop_sequences must not hold an empty string", "stop_sequences");
  }
  if (!stops->empty()) chat["stop"] = *stops;
  return {};
}

/// One client tool as a chat function; a server tool (a `type` other than "custom") is refused.
api_result<json> translate_tool(const json& t, const std::string& path) {
  if (!t.is_object()) return std::unexpected(bad_request(path + " must be an object", path));
  if (const json* type = field(t, "type"); type && *type != "custom") {
    const std::string name = type->is_string() ? type->get<std::string>() : type->dump();
    return std::unexpected(bad_request(path + ".type '" + name +
                                           "' is a server tool, which this server does not run; only client tools "
                                           "(name, description, input_schema) are supported",
                                       path + ".type", "unsupported"));
  }
  const json* name = field(t, "name");
  if (!name || !name->is_string()) return std::unexpected(bad_request(path + ".name must be a string", path + ".name"));
  const json* schema = field(t, "input_schema");
  if (!schema || !schema->is_object())
    return std::unexpected(bad_request(path + ".input_schema must be a JSON Schema object", path + ".input_schema"));
  json fn = {{"name", *name}};
  if (const json* d = field(t, "description")) {
    if (!d->is_string()) return std::unexpected(bad_request(path + ".description must be a string", path + ".description"));
    fn["description"] = *d;
  }
  fn["parameters"] = *schema;
  return json{{"type", "function"}, {"function", std::move(fn)}};
}

opt_error translate_tools(const json& body, json& chat) {
  const json* tools = field(body, "tools");
  if (!tools) return {};
  if (!tools->is_array()) return bad_request("tools must be a list of tools", "tools");
  json out = json::array();
  for (std::size_t i = 0; i < tools->size(); ++i) {
    auto t = translate_tool((*tools)[i], "tools[" + std::to_string(i) + "]");
    if (!t) return t.error();
    out.push_back(std::move(*t));
  }
  if (!out.empty()) chat["tools"] = std::move(out);
  return {};
}

opt_error translate_tool_choice(const json& body, json& chat) {
  const json* c = field(body, "tool_choice");
  if (!c) return {};
  const auto shape = [] {
    return bad_request("tool_choice must be {\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"} (with name for \"tool\")",
                       "tool_choice");
  };
  if (!c->is_object() || !c->contains("type") || !(*c)["type"].is_string()) return shape();
  const auto& type = (*c)["type"].get_ref<const std::string&>();
  if (type == "auto") {
    chat["tool_choice"] = "auto";
  } else if (type == "any") {
    chat["tool_choice"] = "required";
  } else if (type == "none") {
    chat["tool_choice"] = "none";
  } else if (type == "tool") {
    const json* name = field(*c, "name");
    if (!name || !name->is_string()) return bad_request("tool_choice.name must be a string", "tool_choice.name");
    chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", *name}}}};
  } else {
    return shape();
  }
  bool is_serial = false;
  if (read_bool(*c, "disable_parallel_tool_use", is_serial))
    return bad_request("tool_choice.disable_parallel_tool_use must be a boolean", "tool_choice.disable_parallel_tool_use");
  if (is_serial) chat["parallel_tool_calls"] = false;
  return {};
}

/// thinking: the template's enable_thinking, and the budget where the engine can end
/// the reasoning (single-token markers); elsewhere the budget is not enforced.
opt_error translate_thinking(const json& body, const served_model& m, json& chat) {
  const json* t = field(body, "thinking");
  if (!t) return {};
  if (!t->is_object() || !t->contains("type") || !(*t)["type"].is_string())
    return bad_request("thinking must be an object with a type", "thinking");
  const auto& type = (*t)["type"].get_ref<const std::string&>();
  bool is_enabled = true;
  if (type == "enabled") {
    int budget = 0;
    if (!field(*t, "budget_tokens")) return bad_request("thinking.budget_tokens is required", "thinking.budget_tokens");
    if (read_int(*t, "budget_tokens", 1, INT_MAX, budget))
      return bad_request("thinking.budget_tokens must be an integer of at least 1", "thinking.budget_tokens");
    if (m.reasoning_tokens && !chat.contains("thinking_budget")) chat["thinking_budget"] = budget;
  } else if (type == "disabled") {
    is_enabled = false;
  } else if (type != "adaptive" && type != "between_tools") {
    return bad_request("thinking.type must be \"enabled\", \"disabled\", \"adaptive\" or \"between_tools\" (got \"" +
                           type + "\")", "thinking.type");
  }
  json& kwargs = chat["chat_template_kwargs"];
  if (!kwargs.is_object()) kwargs = json::object();
  if (!kwargs.contains("enable_thinking")) kwargs["enable_thinking"] = is_enabled;
  return {};
}

/// output_config {format, effort} and the older output_format.
opt_error translate_output(const json& body, json& chat) {
  const json* config = field(body, "output_config");
  if (config && !config->is_object()) return bad_request("output_config must be an object", "output_config");
  const json* format = config ? field(*config, "format") : nullptr;
  if (!format) format = field(body, "output_format");
  if (format) {
    if (!format->is_object() || format->value("type", json()) != "json_schema" || !format->contains("schema"))
      return bad_request("output_config.format must be {\"type\": \"json_schema\", \"schema\": {...}}", "output_config.format");
    chat["response_format"] = {{"type", "json_schema"}, {"schema", (*format)["schema"]}};
  }
  const json* effort = config ? field(*config, "effort") : nullptr;
  if (!effort) return {};
  static constexpr std::array<std::string_view, 5> efforts = {"low", "medium", "high", "xhigh", "max"};
  const std::string value = effort->is_string() ? effort->get<std::string>() : "";
  if (std::find(efforts.begin(), efforts.end(), value) == efforts.end())
    return bad_request("output_config.effort must be low, medium, high, xhigh or max", "output_config.effort");
  chat["reasoning_effort"] = value == "xhigh" || value == "max" ? "high" : value;
  return {};
}

opt_error translate_length(const json& body, messages_use use, json& chat) {
  if (use == messages_use::count_tokens) return {};
  if (!field(body, "max_tokens")) return bad_request("max_tokens is required", "max_tokens");
  int max_tokens = 0;
  if (auto e = read_int(body, "max_tokens", 1, INT_MAX, max_tokens)) return e;
  chat["max_tokens"] = max_tokens;
  bool stream = false;
  if (auto e = read_bool(body, "stream", stream)) return e;
  chat["stream"] = stream;
  return {};
}

}  // namespace

api_result<json> try_translate_messages(const json& body, const served_model& m, messages_use use) {
  if (!body.is_object()) return std::unexpected(bad_request("the request body must be a JSON object"));
  json chat = json::object();
  for (const char* key : chat_extension_fields())
    if (const json* v = field(body, key)) chat[key] = *v;
  for (const char* key : same_in_chat)
    if (const json* v = field(body, key)) chat[key] = *v;
  if (const json* model = field(body, "model")) chat["model"] = *model;
  auto messages = try_chat_messages(body);
  if (!messages) return std::unexpected(messages.error());
  chat["messages"] = std::move(*messages);
  // Prefill: a final assistant turn of text is the start of the answer, which the model
  // continues (unless the client said otherwise in the chat fields).
  const json& last = chat["messages"].back();
  if (last["role"] == "assistant" && !last.contains("tool_calls") && !field(body, "continue_final_message") &&
      !field(body, "add_generation_prompt"))
    chat["continue_final_message"] = true;
  for (auto step : {translate_stop, translate_tools, translate_tool_choice, translate_output})
    if (auto e = step(body, chat)) return std::unexpected(*e);
  if (auto e = translate_thinking(body, m, chat)) return std::unexpected(*e);
  if (auto e = translate_length(body, use, chat)) return std::unexpected(*e);
  return chat;
}

namespace {

/// `text` with every `from` replaced by `to`.
std::string replaced(std::string text, std::string_view from, std::string_view to) {
  for (auto pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to);
  return text;
}

}  // namespace

api_error messages_param_error(api_error e) {
  // stop_sequences is checked before the chat body is made; these come from its parse.
  constexpr std::pair<std::string_view, std::string_view> names[] = {
      {"response_format", "output_config.format"},
      {".function.parameters", ".input_schema"},
      {".function.name", ".name"},
      {".function.description", ".description"},
  };
  for (auto [from, to] : names) {
    e.param = replaced(std::move(e.param), from, to);
    e.message = replaced(std::move(e.message), from, to);
  }
  return e;
}

}  // namespace inflight::gateway

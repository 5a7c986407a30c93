#include "actors/gateway/responses_request.hpp"

#include <array>
#include <string_view>
#include <utility>

#include "actors/gateway/json_fields.hpp"
#include "actors/gateway/responses_input.hpp"

namespace inflight::gateway {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

/// Chat fields a client of this server may give beside the extensions (chat_extension_fields).
constexpr std::array<const char*, 2> same_in_chat = {"top_k", "stop"};

/// Fields OpenAI takes that this server does not implement: a 400 when set.
struct refused_field {
  const char* name;
  const char* why;
};
constexpr std::array<refused_field, 4> refused_fields = {{
    {"background", "background responses are not implemented"},
    {"conversation", "conversation objects are not implemented (use previous_response_id)"},
    {"prompt", "reusable prompt templates are not implemented"},
    {"top_logprobs", "logprobs are not implemented on /v1/responses"},
}};

bool is_set(const json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0.0;
  return !((v.is_string() || v.is_array() || v.is_object()) && v.empty());
}

opt_error check_refused(const json& body) {
  for (const auto& f : refused_fields) {
    const auto it = body.find(f.name);
    if (it != body.end() && is_set(*it))
      return bad_request(std::string(f.name) + " is not supported by this server: " + f.why, f.name, "unsupported");
  }
  if (const json* t = field(body, "truncation"); t && *t != "disabled") {
    if (*t == "auto")
      return bad_request("truncation \"auto\" is not supported by this server: an input over the context is a 400",
                         "truncation", "unsupported");
    return bad_request("truncation must be \"auto\" or \"disabled\"", "truncation");
  }
  return {};
}

/// metadata: up to 16 string values, keys up to 64 characters, values up to 512.
opt_error check_metadata(const json& body) {
  const json* m = field(body, "metadata");
  if (!m) return {};
  if (!m->is_object() || m->size() > 16) return bad_request("metadata must be an object of at most 16 strings", "metadata");
  for (const auto& [key, value] : m->items()) {
    if (key.size() > 64) return bad_request("metadata keys must be at most 64 characters", "metadata");
    if (!value.is_string() || value.get_ref<const std::string&>().size() > 512)
      return bad_request("metadata." + key + " must be a string of at most 512 characters", "metadata." + key);
  }
  return {};
}

/// tools: function tools only; each as chat's {type, function: {...}} and as the echo.
opt_error translate_tools(const json& body, json& chat, json& echo) {
  const json* tools = field(body, "tools");
  echo["tools"] = json::array();
  if (!tools) return {};
  if (!tools->is_array()) return bad_request("tools must be a list of tools", "tools");
  json out = json::array();
  for (std::size_t i = 0; i < tools->size(); ++i) {
    const json& t = (*tools)[i];
    const std::string path = "tools[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("type") || !t["type"].is_string())
      return bad_request(path + ".type must be a string", path + ".type");
    const auto& type = t["type"].get_ref<const std::string&>();
    if (type != "function")
      return bad_request(path + " is a '" + type + "' tool: only function tools are supported by this server",
                         path + ".type", "unsupported_tool");
    json fn = {{"name", t.contains("name") ? t["name"] : json(nullptr)}};
    for (const char* key : {"description", "parameters", "strict"})
      if (t.contains(key) && !t[key].is_null()) fn[key] = t[key];  // the client's objects as they are
    out.push_back({{"type", "function"}, {"function", fn}});
    echo["tools"].push_back({{"type", "function"}, {"name", fn["name"]}, {"description", t.value("description", json())},
                             {"parameters", t.value("parameters", json())}, {"strict", t.value("strict", json())}});
  }
  chat["tools"] = std::move(out);
  return {};
}

/// tool_choice: "auto" | "none" | "required" | {type: "function", name}.
opt_error translate_tool_choice(const json& body, json& chat, json& echo) {
  const json* c = field(body, "tool_choice");
  echo["tool_choice"] = c ? *c : json("auto");
  if (!c) return {};
  if (c->is_string()) {
    chat["tool_choice"] = *c;  // the chat parser checks the value
    return {};
  }
  if (c->is_object() && c->value("type", json()) == "function" && c->value("name", json()).is_string()) {
    chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", (*c)["name"]}}}};
    return {};
  }
  return bad_request("tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"name\": ...} "
                     "(built-in and allowed_tools choices are not supported)", "tool_choice");
}

/// text.format -> response_format.
opt_error translate_text(const json& body, json& chat, json& echo) {
  echo["text"] = {{"format", {{"type", "text"}}}};
  const json* text = field(body, "text");
  if (!text) return {};
  if (!text->is_object()) return bad_request("text must be an object", "text");
  echo["text"] = *text;
  const json* format = field(*text, "format");
  if (!format) {
    echo["text"]["format"] = {{"type", "text"}};
    return {};
  }
  if (!format->is_object() || !format->value("type", json()).is_string())
    return bad_request("text.format must be an object with a type", "text.format.type");
  const auto& type = (*format)["type"].get_ref<const std::string&>();
  if (type == "text") return {};
  if (type == "json_object") {
    chat["response_format"] = {{"type", "json_object"}};
  } else if (type == "json_schema") {
    json schema = {{"name", format->value("name", json("response"))}};
    for (const char* key : {"schema", "strict", "description"})
      if (format->contains(key)) schema[key] = (*format)[key];
    chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(schema)}};
  } else {
    return bad_request("text.format.type must be text, json_schema or json_object", "text.format.type");
  }
  return {};
}

/// reasoning: {effort, summary}; effort -> reasoning_effort.
opt_error translate_reasoning(const json& body, json& chat, json& echo) {
  echo["reasoning"] = {{"effort", nullptr}, {"summary", nullptr}};
  const json* r = field(body, "reasoning");
  if (!r) return {};
  if (!r->is_object()) return bad_request("reasoning must be an object", "reasoning");
  for (const char* key : {"effort", "summary"}) {
    const json* v = field(*r, key);
    if (v && !v->is_string()) return bad_request(std::string("reasoning.") + key + " must be a string", std::string("reasoning.") + key);
    if (v) echo["reasoning"][key] = *v;
  }
  if (const json* effort = field(*r, "effort")) chat["reasoning_effort"] = *effort;
  return {};
}

/// The sampling and output fields, copied under their chat names; the echo's defaults.
opt_error translate_scalars(const json& body, json& chat, json& echo, bool& stream, bool& store) {
  if (auto e = read_bool(body, "stream", stream)) return e;
  if (auto e = read_bool(body, "store", store)) return e;
  chat["stream"] = stream;
  bool parallel = true;
  if (auto e = read_bool(body, "parallel_tool_calls", parallel)) return e;
  if (field(body, "parallel_tool_calls")) chat["parallel_tool_calls"] = parallel;
  for (const char* key : {"temperature", "top_p", "max_output_tokens"})
    if (const json* v = field(body, key); v && !v->is_number()) return bad_request(std::string(key) + " must be a number", key);
  for (const char* key : {"temperature", "top_p"})
    if (const json* v = field(body, key)) chat[key] = *v;
  if (const json* v = field(body, "max_output_tokens")) chat["max_tokens"] = *v;
  if (const json* v = field(body, "model")) chat["model"] = *v;
  for (const char* key : chat_extension_fields())
    if (const json* v = field(body, key)) chat[key] = *v;
  for (const char* key : same_in_chat)
    if (const json* v = field(body, key)) chat[key] = *v;
  const auto given_or = [&body](const char* key, json fallback) {
    const json* v = field(body, key);
    return v ? *v : fallback;
  };
  echo["temperature"] = given_or("temperature", 1.0);
  echo["top_p"] = given_or("top_p", 1.0);
  echo["parallel_tool_calls"] = parallel;
  echo["max_output_tokens"] = given_or("max_output_tokens", nullptr);
  echo["store"] = store;
  echo["metadata"] = given_or("metadata", json::object());
  echo["truncation"] = "disabled";
  if (const json* u = field(body, "user")) echo["user"] = *u;
  return {};
}

/// The chat body in the client's key order (responses_request::ordered_chat_body). Tools
/// are function tools only, so chat's tools[i] is the body's tools[i].
ojson ordered_chat_body(const json& chat, const ojson& ordered) {
  ojson out(chat);
  if (const json* tools = field(chat, "tools")) {
    const ojson& otools = ordered_child(ordered, "tools");
    ojson list = ojson::array();
    for (std::size_t i = 0; i < tools->size(); ++i) {
      const json& fn = (*tools)[i]["function"];
      ojson f = ojson::object();
      for (const char* key : {"name", "description", "parameters", "strict"})
        if (fn.contains(key)) f[key] = with_order(fn[key], ordered_child(ordered_child(otools, i), key));
      list.push_back({{"type", "function"}, {"function", std::move(f)}});
    }
    out["tools"] = std::move(list);
  }
  if (const json* rf = field(chat, "response_format"); rf && rf->contains("json_schema") && (*rf)["json_schema"].contains("schema")) {
    const ojson& oschema = ordered_child(ordered_child(ordered_child(ordered, "text"), "format"), "schema");
    out["response_format"]["json_schema"]["schema"] = with_order((*rf)["json_schema"]["schema"], oschema);
  }
  for (const char* key : chat_extension_fields())
    if (const json* v = field(chat, key)) out[key] = with_order(*v, ordered_child(ordered, key));
  return out;
}

}  // namespace

api_result<std::optional<std::string>> try_previous_response_id(const json& body) {
  const json* v = field(body, "previous_response_id");
  if (!v) return std::nullopt;
  if (!v->is_string() || v->get_ref<const std::string&>().empty())
    return std::unexpected(bad_request("previous_response_id must be a response id (a string)", "previous_response_id"));
  return v->get<std::string>();
}

api_error previous_response_not_found(const std::string& id) {
  return api_error{404, "invalid_request_error", "Previous response with id '" + id + "' not found.",
                   "previous_response_id", "previous_response_not_found"};
}

api_result<responses_request> try_parse_responses(const json& body, std::shared_ptr<const conversation_turn> previous,
                                                  const ojson& ordered) {
  if (!body.is_object()) return std::unexpected(bad_request("the request body must be a JSON object"));
  responses_request r;
  r.previous = std::move(previous);
  json& chat = r.chat_body;
  chat = json::object();
  r.echo = {{"previous_response_id", body.value("previous_response_id", json())}};
  if (auto e = check_refused(body)) return std::unexpected(*e);
  if (auto e = check_metadata(body)) return std::unexpected(*e);
  json messages = json::array();
  const json* instructions = field(body, "instructions");
  if (instructions && !instructions->is_string())
    return std::unexpected(bad_request("instructions must be a string", "instructions"));
  r.echo["instructions"] = instructions ? *instructions : json(nullptr);
  if (instructions) messages.push_back({{"role", "system"}, {"content", *instructions}});
  if (r.previous)
    if (auto e = try_append_messages(conversation_items(r.previous), "previous_response_id", messages))
      return std::unexpected(*e);
  const json* input = field(body, "input");
  if (!input && !r.previous) return std::unexpected(bad_request("input is required", "input"));
  auto items = input ? try_input_items(*input) : api_result<json>(json::array());
  if (!items) return std::unexpected(items.error());
  if (auto e = try_append_messages(*items, "input", messages)) return std::unexpected(*e);
  if (messages.empty()) return std::unexpected(bad_request("input must hold at least one item", "input"));
  r.input_items = std::move(*items);
  chat["messages"] = std::move(messages);
  for (auto step : {translate_tools, translate_tool_choice, translate_text, translate_reasoning})
    if (auto e = step(body, chat, r.echo)) return std::unexpected(*e);
  if (auto e = translate_scalars(body, chat, r.echo, r.stream, r.store)) return std::unexpected(*e);
  r.ordered_chat_body = ordered_chat_body(chat, ordered);
  return r;
}

api_error to_responses_error(api_error e) {
  // Longest first: response_format.json_schema.schema before response_format.
  static constexpr std::pair<std::string_view, std::string_view> names[] = {
      {"response_format.json_schema.", "text.format."}, {"response_format", "text.format"},
      {"max_completion_tokens", "max_output_tokens"},   {"max_tokens", "max_output_tokens"},
      {"reasoning_effort", "reasoning.effort"},         {"].function.", "]."},
      {"messages", "input"},
  };
  const auto rename = [](std::string& s) {
    for (auto [from, to] : names) {
      for (std::size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
        s.replace(pos, from.size(), to);
    }
  };
  rename(e.param);
  rename(e.message);
  return e;
}

}  // namespace inflight::gateway

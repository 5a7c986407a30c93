#include "actors/gateway/chat_messages.hpp"

#include <array>
#include <optional>
#include <string_view>

#include "core/model/tokenizer/tokenizer.hpp"

namespace inflight::gateway {

using nlohmann::json;

namespace {

using opt_error = std::optional<api_error>;

constexpr std::array<std::string_view, 5> known_roles = {"system", "developer", "user", "assistant", "tool"};
// Parts OpenAI accepts in user messages that a text-only model cannot read.
constexpr std::array<std::string_view, 3> media_parts = {"image_url", "input_audio", "file"};

template <std::size_t N>
bool is_one_of(const std::string& s, const std::array<std::string_view, N>& set) {
  for (auto v : set)
    if (s == v) return true;
  return false;
}

api_error field_error(const std::string& param, const std::string& what) {
  return bad_request(param + " " + what, param);
}

/// A field that must be a string when present (null counts as absent).
opt_error optional_string(const json& obj, const char* key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null() || it->is_string()) return {};
  return field_error(path + "." + key, "must be a string");
}

opt_error required_string(const json& obj, const char* key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return field_error(path + "." + key, "is required");
  if (!it->is_string()) return field_error(path + "." + key, "must be a string");
  return {};
}

/// One part of a content list; appends its text. `allow_refusal`: assistant messages.
opt_error read_part(const json& part, const std::string& path, const std::string& role, bool allow_refusal,
                    std::string& text) {
  if (!part.is_object()) return field_error(path, "must be an object with a type");
  auto type_it = part.find("type");
  if (type_it == part.end() || !type_it->is_string()) return field_error(path + ".type", "must be a string");
  const auto type = type_it->get<std::string>();
  if (type == "text") {
    if (auto e = required_string(part, "text", path)) return e;
    text += part["text"].get<std::string>();
    return {};
  }
  if (type == "refusal" && allow_refusal) {
    if (auto e = required_string(part, "refusal", path)) return e;
    text += part["refusal"].get<std::string>();
    return {};
  }
  if (role == "user" && is_one_of(type, media_parts))
    return field_error(path + ".type", "'" + type + "' is not supported: this model reads text only");
  return field_error(path + ".type", "'" + type + "' is not a content part type of a " + role + " message");
}

/// content: a string, or a non-empty list of parts. Absent or null is an error here.
opt_error read_content(const json& content, const std::string& path, const std::string& role, std::string& text) {
  if (content.is_string()) {
    text = content.get<std::string>();
    return {};
  }
  if (!content.is_array()) return field_error(path, "must be a string or a list of content parts");
  if (content.empty()) return field_error(path, "must not be an empty list");
  for (std::size_t j = 0; j < content.size(); ++j) {
    if (auto e = read_part(content[j], path + "[" + std::to_string(j) + "]", role, role == "assistant", text)) return e;
  }
  return {};
}

opt_error read_tool_calls(const json& calls, const std::string& path) {
  if (!calls.is_array()) return field_error(path, "must be a list");
  for (std::size_t j = 0; j < calls.size(); ++j) {
    const std::string p = path + "[" + std::to_string(j) + "]";
    const json& call = calls[j];
    if (!call.is_object()) return field_error(p, "must be an object");
    if (auto e = required_string(call, "id", p)) return e;
    if (auto e = required_string(call, "type", p)) return e;
    if (call["type"] != "function") return field_error(p + ".type", "must be \"function\"");
    auto fn = call.find("function");
    if (fn == call.end() || !fn->is_object()) return field_error(p + ".function", "must be an object");
    if (auto e = required_string(*fn, "name", p + ".function")) return e;
    if (auto e = required_string(*fn, "arguments", p + ".function")) return e;
  }
  return {};
}

bool has_entries(const json& m, const char* key) {
  auto it = m.find(key);
  return it != m.end() && ((it->is_array() && !it->empty()) || it->is_object());
}

opt_error read_assistant(const json& m, const std::string& path, std::string& text) {
  if (auto it = m.find("tool_calls"); it != m.end() && !it->is_null())
    if (auto e = read_tool_calls(*it, path + ".tool_calls")) return e;
  if (auto it = m.find("function_call"); it != m.end() && !it->is_null()) {
    if (!it->is_object()) return field_error(path + ".function_call", "must be an object");
    if (auto e = required_string(*it, "name", path + ".function_call")) return e;
    if (auto e = required_string(*it, "arguments", path + ".function_call")) return e;
  }
  if (auto e = optional_string(m, "refusal", path)) return e;
  auto content = m.find("content");
  if (content == m.end() || content->is_null()) {
    if (has_entries(m, "tool_calls") || has_entries(m, "function_call")) return {};
    return field_error(path + ".content", "is required unless tool_calls are given");
  }
  return read_content(*content, path + ".content", "assistant", text);
}

api_result<chat_message> read_message(const json& m, const std::string& path) {
  if (!m.is_object()) return std::unexpected(field_error(path, "must be an object with a role"));
  auto role_it = m.find("role");
  if (role_it == m.end() || role_it->is_null()) return std::unexpected(field_error(path + ".role", "is required"));
  if (!role_it->is_string()) return std::unexpected(field_error(path + ".role", "must be a string"));
  const auto role = role_it->get<std::string>();
  if (!is_one_of(role, known_roles)) {
    return std::unexpected(
        field_error(path + ".role", "must be one of system, developer, user, assistant, tool (got '" + role + "')"));
  }
  if (auto e = optional_string(m, "name", path)) return std::unexpected(*e);
  chat_message out{role == "developer" ? "system" : role, {}};
  if (role == "assistant") {
    if (auto e = read_assistant(m, path, out.content)) return std::unexpected(*e);
  } else {
    if (role == "tool")
      if (auto e = required_string(m, "tool_call_id", path)) return std::unexpected(*e);
    auto content = m.find("content");
    if (content == m.end() || content->is_null())
      return std::unexpected(field_error(path + ".content", "is required for a " + role + " message"));
    if (auto e = read_content(*content, path + ".content", role, out.content)) return std::unexpected(*e);
  }
  if (!is_valid_utf8(out.content))
    return std::unexpected(bad_request(path + ".content is not valid UTF-8", path + ".content", "invalid_utf8"));
  return out;
}

}  // namespace

api_result<std::vector<chat_message>> try_parse_messages(const json& messages) {
  if (!messages.is_array()) return std::unexpected(bad_request("messages must be a list", "messages"));
  if (messages.empty()) return std::unexpected(bad_request("messages must not be empty", "messages"));
  std::vector<chat_message> out;
  out.reserve(messages.size());
  for (std::size_t i = 0; i < messages.size(); ++i) {
    auto m = read_message(messages[i], "messages[" + std::to_string(i) + "]");
    if (!m) return std::unexpected(m.error());
    out.push_back(std::move(*m));
  }
  return out;
}

namespace {

using ojson = nlohmann::ordered_json;

/// A content list (checked by try_parse_messages) as the text of its text and refusal parts.
std::string content_text(const ojson& parts) {
  std::string text;
  for (const auto& part : parts) {
    for (const char* key : {"text", "refusal"})
      if (auto it = part.find(key); it != part.end() && it->is_string()) text += it->get<std::string>();
  }
  return text;
}

/// The calls with each function's arguments as a JSON object (kept a string when the
/// text is not one); every other field as the client sent it, in its order.
ojson template_tool_calls(const ojson& calls) {
  ojson out = calls;
  for (auto& call : out) {
    auto fn = call.find("function");
    if (fn == call.end() || !fn->is_object()) continue;
    auto arguments = fn->find("arguments");
    if (arguments == fn->end() || !arguments->is_string()) continue;
    auto args = ojson::parse(arguments->get_ref<const std::string&>(), nullptr, false);
    if (!args.is_discarded() && args.is_object()) *arguments = std::move(args);
  }
  return out;
}

}  // namespace

ojson template_messages(const ojson& messages) {
  auto out = ojson::array();
  for (const auto& m : messages) {
    ojson msg = m;  // every field, in the request's order
    if (msg["role"] == "developer") msg["role"] = "system";
    auto content = msg.find("content");
    if (content == msg.end()) msg["content"] = nullptr;
    else if (content->is_array()) *content = content_text(*content);
    if (auto calls = msg.find("tool_calls"); calls != msg.end()) {
      if (calls->is_array() && !calls->empty()) *calls = template_tool_calls(*calls);
      else msg.erase("tool_calls");
    }
    out.push_back(std::move(msg));
  }
  return out;
}

}  // namespace inflight::gateway

#include "actors/gateway/responses_input.hpp"

#include <array>
#include <string_view>

namespace inflight::gateway {

using nlohmann::json;

namespace {

using opt_error = std::optional<api_error>;

// Parts and items OpenAI accepts that a text model behind a stateless server cannot use.
constexpr std::array<std::string_view, 3> media_parts = {"input_image", "input_file", "input_audio"};

bool is_media(const std::string& type) {
  for (auto m : media_parts)
    if (type == m) return true;
  return false;
}

api_error field_error(const std::string& path, const std::string& what) { return bad_request(path + " " + what, path); }

/// obj[key] as a string; a 400 naming `path.key` when it is absent or not a string.
api_result<std::string> required_string(const json& obj, const char* key, const std::string& path) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::unexpected(field_error(path + "." + key, "is required"));
  if (!it->is_string()) return std::unexpected(field_error(path + "." + key, "must be a string"));
  return it->get<std::string>();
}

/// One content part as a chat text part.
api_result<json> text_part(const json& part, const std::string& path, bool is_assistant) {
  if (!part.is_object()) return std::unexpected(field_error(path, "must be an object with a type"));
  auto type = required_string(part, "type", path);
  if (!type) return std::unexpected(type.error());
  const bool is_text = *type == "input_text" || *type == "output_text" || *type == "text";
  if (is_text || (*type == "refusal" && is_assistant)) {
    auto text = required_string(part, is_text ? "text" : "refusal", path);
    if (!text) return std::unexpected(text.error());
    return json{{"type", "text"}, {"text", *text}};
  }
  if (is_media(*type))
    return std::unexpected(field_error(path + ".type", "'" + *type + "' is not supported: this model reads text only"));
  return std::unexpected(field_error(path + ".type", "'" + *type + "' is not a content part type this server reads"));
}

/// content: a string, or a non-empty list of text parts (as chat text parts).
api_result<json> message_content(const json& item, const std::string& path, bool is_assistant) {
  const auto it = item.find("content");
  const std::string cpath = path + ".content";
  if (it == item.end() || it->is_null()) return std::unexpected(field_error(cpath, "is required"));
  if (it->is_string()) return *it;
  if (!it->is_array()) return std::unexpected(field_error(cpath, "must be a string or a list of content parts"));
  if (it->empty()) return std::unexpected(field_error(cpath, "must not be an empty list"));
  json parts = json::array();
  for (std::size_t j = 0; j < it->size(); ++j) {
    auto part = text_part((*it)[j], cpath + "[" + std::to_string(j) + "]", is_assistant);
    if (!part) return std::unexpected(part.error());
    parts.push_back(std::move(*part));
  }
  return parts;
}

opt_error append_message(const json& item, const std::string& path, json& messages) {
  auto role = required_string(item, "role", path);
  if (!role) return role.error();
  if (*role != "user" && *role != "assistant" && *role != "system" && *role != "developer")
    return field_error(path + ".role", "must be user, assistant, system or developer");
  auto content = message_content(item, path, *role == "assistant");
  if (!content) return content.error();
  messages.push_back({{"role", *role}, {"content", std::move(*content)}});
  return {};
}

/// A call joins the assistant message before it (its text or earlier calls), or starts one.
opt_error append_call(const json& item, const std::string& path, json& messages) {
  auto call_id = required_string(item, "call_id", path);
  if (!call_id) return call_id.error();
  auto name = required_string(item, "name", path);
  if (!name) return name.error();
  auto arguments = required_string(item, "arguments", path);
  if (!arguments) return arguments.error();
  json call = {{"id", *call_id}, {"type", "function"}, {"function", {{"name", *name}, {"arguments", *arguments}}}};
  if (messages.empty() || messages.back()["role"] != "assistant")
    messages.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array()}});
  json& last = messages.back();
  if (!last.contains("tool_calls")) last["tool_calls"] = json::array();
  last["tool_calls"].push_back(std::move(call));
  return {};
}

opt_error append_call_output(const json& item, const std::string& path, json& messages) {
  auto call_id = required_string(item, "call_id", path);
  if (!call_id) return call_id.error();
  const auto it = item.find("output");
  const std::string opath = path + ".output";
  if (it == item.end() || it->is_null()) return field_error(opath, "is required");
  json content;
  if (it->is_string()) {
    content = *it;
  } else if (it->is_array() && !it->empty()) {
    content = json::array();
    for (std::size_t j = 0; j < it->size(); ++j) {
      auto part = text_part((*it)[j], opath + "[" + std::to_string(j) + "]", false);
      if (!part) return part.error();
      content.push_back(std::move(*part));
    }
  } else {
    return field_error(opath, "must be a string or a non-empty list of input_text parts");
  }
  messages.push_back({{"role", "tool"}, {"tool_call_id", *call_id}, {"content", std::move(content)}});
  return {};
}

opt_error append_item(const json& item, const std::string& path, json& messages) {
  if (!item.is_object()) return field_error(path, "must be an object (an input item)");
  const auto type_it = item.find("type");
  if (type_it != item.end() && !type_it->is_null() && !type_it->is_string())
    return field_error(path + ".type", "must be a string");
  const std::string type = type_it == item.end() || type_it->is_null() ? "message" : type_it->get<std::string>();
  if (type == "message") return append_message(item, path, messages);
  if (type == "function_call") return append_call(item, path, messages);
  if (type == "function_call_output") return append_call_output(item, path, messages);
  if (type == "reasoning") return {};
  if (type == "item_reference")
    return field_error(path + ".type", "'item_reference' is not supported: send the item itself, or previous_response_id");
  return field_error(path + ".type", "'" + type + "' is not an input item type this server reads "
                                     "(message, function_call, function_call_output, reasoning)");
}

}  // namespace

api_result<json> try_input_items(const json& input) {
  if (input.is_string()) return json::array({{{"type", "message"}, {"role", "user"}, {"content", input}}});
  if (!input.is_array()) return std::unexpected(field_error("input", "must be a string or a list of input items"));
  return input;
}

opt_error try_append_messages(const json& items, const std::string& path, json& messages) {
  for (std::size_t i = 0; i < items.size(); ++i)
    if (auto e = append_item(items[i], path + "[" + std::to_string(i) + "]", messages)) return e;
  return {};
}

}  // namespace inflight::gateway

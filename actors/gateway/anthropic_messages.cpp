#include "actors/gateway/anthropic_messages.hpp"

#include <optional>
#include <string>

#include "actors/gateway/json_fields.hpp"

namespace inflight::gateway {

using json = nlohmann::ordered_json;  // the client's key order

namespace {

api_error field_error(const std::string& param, const std::string& what) {
  return bad_request(param + " " + what, param);
}

std::string at(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

opt_error required_string(const json& obj, const char* key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return field_error(path + "." + key, "is required");
  if (!it->is_string()) return field_error(path + "." + key, "must be a string");
  return {};
}

/// A block's `type`; a 400 when the block is not an object with a string type.
api_result<std::string> block_type(const json& block, const std::string& path) {
  if (!block.is_object()) return std::unexpected(field_error(path, "must be an object with a type"));
  auto it = block.find("type");
  if (it == block.end() || !it->is_string()) return std::unexpected(field_error(path + ".type", "must be a string"));
  return it->get<std::string>();
}

/// The 400 of a block type a place does not take: media get their own reason.
api_error refused_block(const std::string& type, const std::string& path, const std::string& where) {
  if (type == "image" || type == "document")
    return field_error(path + ".type", "'" + type + "' is not supported: this model reads text only");
  return field_error(path + ".type", "'" + type + "' is not a content block type of " + where);
}

/// A `text` block's text part ({"type": "text", "text"}).
api_result<json> text_part(const json& block, const std::string& path) {
  if (auto e = required_string(block, "text", path)) return std::unexpected(*e);
  return json{{"type", "text"}, {"text", block["text"]}};
}

/// Content that may only hold text: a string, or a list of text blocks (as text parts).
api_result<json> text_content(const json& content, const std::string& path, const std::string& where) {
  if (content.is_string()) return content;
  if (!content.is_array()) return std::unexpected(field_error(path, "must be a string or a list of text blocks"));
  json parts = json::array();
  for (std::size_t j = 0; j < content.size(); ++j) {
    auto type = block_type(content[j], at(path, j));
    if (!type) return std::unexpected(type.error());
    if (*type != "text") return std::unexpected(refused_block(*type, at(path, j), where));
    auto part = text_part(content[j], at(path, j));
    if (!part) return std::unexpected(part.error());
    parts.push_back(std::move(*part));
  }
  return parts;
}

/// A tool_result block as a `tool` message.
api_result<json> tool_message(const json& block, const std::string& path) {
  if (auto e = required_string(block, "tool_use_id", path)) return std::unexpected(*e);
  bool is_error = false;
  if (auto e = read_bool(block, "is_error", is_error)) return std::unexpected(field_error(path + ".is_error", "must be a boolean"));
  json content = "";
  if (const json* c = field(block, "content")) {
    auto text = text_content(*c, path + ".content", "a tool_result");
    if (!text) return std::unexpected(text.error());
    content = text->is_array() && text->empty() ? json("") : std::move(*text);
  }
  if (is_error) {
    json parts = content.is_string() ? json::array({{{"type", "text"}, {"text", content}}}) : content;
    parts.insert(parts.begin(), {{"type", "text"}, {"text", "Error: "}});
    content = std::move(parts);
  }
  return json{{"role", "tool"}, {"tool_call_id", block["tool_use_id"]}, {"content", std::move(content)}};
}

/// A tool_use block as a chat tool call.
api_result<json> tool_call(const json& block, const std::string& path) {
  if (auto e = required_string(block, "id", path)) return std::unexpected(*e);
  if (auto e = required_string(block, "name", path)) return std::unexpected(*e);
  auto input = block.find("input");
  if (input == block.end() || !input->is_object()) return std::unexpected(field_error(path + ".input", "must be an object"));
  return json{{"id", block["id"]},
              {"type", "function"},
              {"function", {{"name", block["name"]}, {"arguments", dump_json(*input)}}}};
}

/// A user turn: text blocks join one user message; each tool_result is a tool message.
opt_error add_user(const json& content, const std::string& path, json& out) {
  json parts = json::array();
  const auto flush = [&] {
    if (!parts.empty()) out.push_back({{"role", "user"}, {"content", std::exchange(parts, json::array())}});
  };
  for (std::size_t j = 0; j < content.size(); ++j) {
    const std::string p = at(path, j);
    auto type = block_type(content[j], p);
    if (!type) return type.error();
    if (*type == "text") {
      auto part = text_part(content[j], p);
      if (!part) return part.error();
      parts.push_back(std::move(*part));
    } else if (*type == "tool_result") {
      flush();
      auto msg = tool_message(content[j], p);
      if (!msg) return msg.error();
      out.push_back(std::move(*msg));
    } else {
      return refused_block(*type, p, "a user message");
    }
  }
  flush();
  return {};
}

/// An assistant turn: text, tool calls; thinking blocks are checked and left out.
opt_error add_assistant(const json& content, const std::string& path, json& out) {
  json parts = json::array(), calls = json::array();
  for (std::size_t j = 0; j < content.size(); ++j) {
    const std::string p = at(path, j);
    auto type = block_type(content[j], p);
    if (!type) return type.error();
    if (*type == "text") {
      auto part = text_part(content[j], p);
      if (!part) return part.error();
      parts.push_back(std::move(*part));
    } else if (*type == "tool_use") {
      auto call = tool_call(content[j], p);
      if (!call) return call.error();
      calls.push_back(std::move(*call));
    } else if (*type == "thinking") {
      if (auto e = required_string(content[j], "thinking", p)) return e;
    } else if (*type == "redacted_thinking") {
      if (auto e = required_string(content[j], "data", p)) return e;
    } else {
      return refused_block(*type, p, "an assistant message");
    }
  }
  json msg = {{"role", "assistant"}};
  msg["content"] = !parts.empty() ? parts : calls.empty() ? json("") : json(nullptr);
  if (!calls.empty()) msg["tool_calls"] = std::move(calls);
  out.push_back(std::move(msg));
  return {};
}

opt_error add_message(const json& m, const std::string& path, json& out) {
  if (!m.is_object()) return field_error(path, "must be an object with a role");
  if (auto e = required_string(m, "role", path)) return e;
  const auto role = m["role"].get<std::string>();
  if (role != "user" && role != "assistant") {
    return field_error(path + ".role", "must be user or assistant (got '" + role +
                                           "'; the system prompt is the top-level system field)");
  }
  const json* content = field(m, "content");
  if (!content) return field_error(path + ".content", "is required");
  if (content->is_string()) {
    out.push_back({{"role", role}, {"content", *content}});
    return {};
  }
  if (!content->is_array()) return field_error(path + ".content", "must be a string or a list of content blocks");
  if (content->empty()) return field_error(path + ".content", "must not be an empty list");
  return role == "user" ? add_user(*content, path + ".content", out) : add_assistant(*content, path + ".content", out);
}

}  // namespace

api_result<json> try_chat_messages(const json& body) {
  json out = json::array();
  if (const json* system = field(body, "system")) {
    auto text = text_content(*system, "system", "the system prompt");
    if (!text) return std::unexpected(text.error());
    const bool is_empty = text->is_array() ? text->empty() : text->get_ref<const std::string&>().empty();
    if (!is_empty) out.push_back({{"role", "system"}, {"content", std::move(*text)}});
  }
  const json* messages = field(body, "messages");
  if (!messages) return std::unexpected(bad_request("messages is required", "messages"));
  if (!messages->is_array()) return std::unexpected(bad_request("messages must be a list", "messages"));
  if (messages->empty()) return std::unexpected(bad_request("messages must not be empty", "messages"));
  for (std::size_t i = 0; i < messages->size(); ++i)
    if (auto e = add_message((*messages)[i], at("messages", i), out)) return std::unexpected(*e);
  return out;
}

}  // namespace inflight::gateway

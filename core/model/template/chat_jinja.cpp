// The Jinja-backed chat template (the model's own template text, executed) and the
// conversions between the rich chat_input and the family renderers' role + text turns.
#include "core/model/template/chat_template.hpp"

namespace inflight {
namespace {

using ojson = nlohmann::ordered_json;

/// A message's text for the family renderers: a string, text parts joined, null as "".
std::string message_text(const ojson& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (!content.is_array()) return text;
  for (const ojson& part : content) {
    if (!part.is_object()) continue;
    const auto type = part.find("type");
    const auto part_text = part.find("text");
    if (type != part.end() && *type == "text" && part_text != part.end() && part_text->is_string()) {
      text += part_text->get<std::string>();
    }
  }
  return text;
}

result<std::vector<chat_message>> to_chat_messages(const ojson& messages) {
  if (!messages.is_array()) return make_error(errc::invalid_argument, "chat template: messages must be a list");
  std::vector<chat_message> out;
  for (const ojson& m : messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return make_error(errc::invalid_argument, "chat template: every message needs a role");
    }
    out.push_back({m["role"].get<std::string>(), message_text(m.value("content", ojson()))});
  }
  return out;
}

ojson to_json_messages(std::span<const chat_message> messages) {
  ojson out = ojson::array();
  for (const chat_message& m : messages) out.push_back({{"role", m.role}, {"content", m.content}});
  return out;
}

/// The variables transformers' apply_chat_template gives the template.
ojson render_context(const chat_input& input) {
  ojson context = {{"messages", input.messages},
                   {"tools", input.tools},
                   {"documents", nullptr},
                   {"add_generation_prompt", input.add_generation_prompt},
                   {"bos_token", input.bos},
                   {"eos_token", input.eos}};
  if (input.extra.is_object()) {
    for (auto it = input.extra.begin(); it != input.extra.end(); ++it) context[it.key()] = it.value();
  }
  return context;
}

/// One tool definition, for the start-up check of templates that need tools.
ojson probe_tools() {
  return ojson::array({{{"type", "function"},
                        {"function",
                         {{"name", "get_time"},
                          {"description", "Get the current time"},
                          {"parameters", {{"type", "object"}, {"properties", ojson::object()}}}}}}});
}

/// The final message's text: its content, or the last text part of a content list.
std::optional<std::string> final_message_text(const ojson& messages) {
  if (!messages.is_array() || messages.empty() || !messages.back().is_object()) return std::nullopt;
  const ojson content = messages.back().value("content", ojson());
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return std::nullopt;
  for (auto it = content.rbegin(); it != content.rend(); ++it)
    if (it->is_object() && it->contains("text") && (*it)["text"].is_string()) return (*it)["text"].get<std::string>();
  return std::nullopt;
}

/// transformers' continue_final_message: the rendering cut after the last occurrence of
/// the final message's (stripped) text.
result<std::string> cut_after_final_message(std::string text, const ojson& messages) {
  const auto final_text = final_message_text(messages);
  if (!final_text) return make_error(errc::invalid_argument, "continue_final_message: the final message has no text");
  const std::string stripped = trim_white_space(*final_text);
  const std::size_t at = text.rfind(stripped);
  if (at == std::string::npos) {
    return make_error(errc::invalid_argument,
                      "continue_final_message: the final message does not appear in the rendered chat template");
  }
  text.resize(at + stripped.size());
  return text;
}

}  // namespace

result<chat_template> chat_template::try_from_jinja(std::string_view jinja_source) {
  auto parsed = jinja::jinja_template::try_parse(jinja_source);
  if (!parsed) return std::unexpected(parsed.error());
  chat_template t(chat_family::jinja);
  t.jinja_ = std::move(*parsed);
  return t;
}

result<chat_template> chat_template::try_from_model(std::string_view jinja_source, std::string* warning) {
  if (jinja_source.empty()) return try_detect(jinja_source);
  auto t = try_from_jinja(jinja_source);
  if (t) {
    chat_input probe;
    probe.messages = ojson::array({{{"role", "user"}, {"content", "Hello"}}});
    auto rendered = t->try_render(probe);
    if (rendered) return t;
    probe.tools = probe_tools();
    if (t->try_render(probe)) return t;  // a template for tool requests (Hermes' tool_use)
    t = std::unexpected(rendered.error());
  }
  if (warning) *warning = "the model's chat template cannot be executed (" + t.error().message + ")";
  auto detected = try_detect(jinja_source);
  if (detected && warning) {
    *warning += "; using the built-in '" + std::string(detected->name()) + "' renderer recognised from its markers";
  }
  return detected;
}

result<std::string> chat_template::try_render(std::span<const chat_message> messages, bool add_generation_prompt,
                                              std::string_view bos, std::string_view eos) const {
  if (family_ != chat_family::jinja) return try_render_family(messages, add_generation_prompt, bos, eos);
  chat_input input;
  input.messages = to_json_messages(messages);
  input.add_generation_prompt = add_generation_prompt;
  input.bos = std::string(bos);
  input.eos = std::string(eos);
  return try_render(input);
}

result<std::string> chat_template::try_render(const chat_input& input) const {
  if (family_ == chat_family::jinja) {
    jinja::render_limits limits;
    limits.fixed_now = input.fixed_now;
    auto text = jinja_->try_render(render_context(input), limits);
    if (!text) return make_error(text.error().code, "chat template: " + text.error().message);
    if (input.continue_final_message) return cut_after_final_message(std::move(*text), input.messages);
    return text;
  }
  if (!input.tools.is_null() && !input.tools.empty()) {
    return make_error(errc::unsupported, "the built-in chat template '" + std::string(name()) + "' cannot render tools");
  }
  auto messages = to_chat_messages(input.messages);
  if (!messages) return std::unexpected(messages.error());
  auto text = try_render_family(*messages, input.add_generation_prompt, input.bos, input.eos);
  if (text && input.continue_final_message) return cut_after_final_message(std::move(*text), input.messages);
  return text;
}

}  // namespace inflight

#include "core/model/template/chat_template.hpp"

#include <array>

#include "core/model/template/text.hpp"

namespace inflight {
namespace {

using messages_view = std::span<const chat_message>;

struct family_name {
  chat_family family;
  std::string_view name;
};
constexpr std::array<family_name, 6> family_names{{{chat_family::llama_2, "llama-2"},
                                                   {chat_family::llama_3, "llama-3"},
                                                   {chat_family::mistral, "mistral"},
                                                   {chat_family::chatml, "chatml"},
                                                   {chat_family::qwen3, "qwen3"},
                                                   {chat_family::zephyr, "zephyr"}}};

bool contains(std::string_view text, std::string_view what) { return text.find(what) != std::string_view::npos; }

result<std::string> alternation_error() {
  return make_error(errc::invalid_argument, "chat template: conversation roles must alternate user/assistant/user/assistant/...");
}

/// A literal default system prompt written into a ChatML template, "" when none.
std::string find_default_system(std::string_view source) {
  constexpr std::string_view opener = "<|im_start|>system\\n";
  for (std::size_t pos = source.find(opener); pos != std::string_view::npos; pos = source.find(opener, pos + 1)) {
    const std::size_t begin = pos + opener.size();
    const std::size_t end = source.find("<|im_end|>", begin);
    if (end == std::string_view::npos) break;
    std::string_view text = source.substr(begin, end - begin);
    if (!text.empty() && !contains(text, "'") && !contains(text, "\"") && !contains(text, "{")) return std::string(text);
  }
  return {};
}

std::string render_llama_3(messages_view messages, std::string_view bos, bool add_prompt) {
  std::string out;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (i == 0) out += bos;
    out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n";
    out += trim_white_space(messages[i].content);
    out += "<|eot_id|>";
  }
  if (add_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

result<std::string> render_llama_2(messages_view messages, std::string_view bos, std::string_view eos) {
  const bool has_system = !messages.empty() && messages[0].role == "system";
  const messages_view turns = has_system ? messages.subspan(1) : messages;
  std::string out;
  for (std::size_t i = 0; i < turns.size(); ++i) {
    const chat_message& m = turns[i];
    if ((m.role == "user") != (i % 2 == 0)) return alternation_error();
    std::string content = m.content;
    if (i == 0 && has_system) content = "<<SYS>>\n" + messages[0].content + "\n<</SYS>>\n\n" + content;
    if (m.role == "user") {
      out += std::string(bos) + "[INST] " + trim_white_space(content) + " [/INST]";
    } else if (m.role == "assistant") {
      out += " " + trim_white_space(content) + " " + std::string(eos);
    }
  }
  return out;
}

result<std::string> render_mistral(messages_view messages, std::string_view bos, std::string_view eos,
                                   bool space_after_eos) {
  std::string out(bos);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const chat_message& m = messages[i];
    if ((m.role == "user") != (i % 2 == 0)) return alternation_error();
    if (m.role == "user") {
      out += "[INST] " + m.content + " [/INST]";
    } else if (m.role == "assistant") {
      out += m.content + std::string(eos) + (space_after_eos ? " " : "");
    } else {
      return make_error(errc::invalid_argument, "chat template (mistral): only user and assistant roles are supported");
    }
  }
  return out;
}

std::string render_chatml(messages_view messages, bool add_prompt, const std::string& default_system) {
  std::string out;
  if (!default_system.empty() && (messages.empty() || messages[0].role != "system")) {
    out += "<|im_start|>system\n" + default_system + "<|im_end|>\n";
  }
  for (const chat_message& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  if (add_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::string render_zephyr(messages_view messages, std::string_view eos, bool add_prompt) {
  std::string out;
  for (const chat_message& m : messages) {
    if (m.role == "user" || m.role == "system" || m.role == "assistant") {
      out += "<|" + m.role + "|>\n" + m.content + std::string(eos) + "\n";
    }
  }
  if (add_prompt && !messages.empty()) out += "<|assistant|>\n";
  return out;
}

}  // namespace

std::string chat_template_names() {
  std::string names;
  for (const auto& f : family_names) names += (names.empty() ? "\"" : " | \"") + std::string(f.name) + "\"";
  return names;
}

std::string trim_white_space(std::string_view text) { return jinja::python_strip(text, std::nullopt, true, true); }

std::string_view chat_template::name() const {
  if (family_ == chat_family::jinja) return "jinja";
  for (const auto& f : family_names) {
    if (f.family == family_) return f.name;
  }
  return "?";
}

result<chat_template> chat_template::try_from_name(std::string_view name) {
  for (const auto& f : family_names) {
    if (f.name == name) return chat_template(f.family);
  }
  return make_error(errc::invalid_argument,
                    "unknown chat template '" + std::string(name) + "': set model.chat_template = " + chat_template_names());
}

result<chat_template> chat_template::try_detect(std::string_view source) {
  if (source.empty()) {
    return make_error(errc::not_found,
                      "the model has no chat template: set model.chat_template = " + chat_template_names());
  }
  if (contains(source, "<|start_header_id|>") && !contains(source, "Cutting Knowledge Date")) {
    chat_template t(chat_family::llama_3);
    t.always_generation_prompt_ = !contains(source, "add_generation_prompt");
    return t;
  }
  if (contains(source, "<|im_start|>")) {
    if (contains(source, "<think>") || contains(source, "reasoning_content")) return chat_template(chat_family::qwen3);
    chat_template t(chat_family::chatml);
    t.default_system_ = find_default_system(source);
    return t;
  }
  if (contains(source, "[INST]")) {
    if (contains(source, "<<SYS>>")) return chat_template(chat_family::llama_2);
    chat_template t(chat_family::mistral);
    t.space_after_eos_ = contains(source, "eos_token + ' '");
    return t;
  }
  if (contains(source, "<|user|>") && contains(source, "<|assistant|>")) return chat_template(chat_family::zephyr);
  return make_error(errc::unsupported, "unrecognised chat template in tokenizer_config.json: set model.chat_template = " +
                                           chat_template_names());
}

}  // namespace inflight

namespace inflight {
namespace {

/// Qwen3 splits "<think>reasoning</think>answer" in assistant turns.
struct assistant_parts {
  std::string reasoning, content;
};

std::string_view strip_newlines(std::string_view s, bool left, bool right) {
  while (left && !s.empty() && s.front() == '\n') s.remove_prefix(1);
  while (right && !s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}

assistant_parts split_thinking(const std::string& content) {
  const std::size_t close = content.find("</think>");
  if (close == std::string::npos) return {{}, content};
  const std::size_t last_close = content.rfind("</think>");
  std::string_view before = std::string_view(content).substr(0, close);
  before = strip_newlines(before, false, true);
  if (const std::size_t open = before.rfind("<think>"); open != std::string_view::npos) before = before.substr(open + 7);
  return {std::string(strip_newlines(before, true, false)),
          std::string(strip_newlines(std::string_view(content).substr(last_close + 8), true, false))};
}

bool is_tool_response(const std::string& s) {
  return s.starts_with("<tool_response>") && s.ends_with("</tool_response>");
}

std::string render_qwen3_assistant(const chat_message& m, bool is_after_last_query, bool is_last) {
  const assistant_parts parts = split_thinking(m.content);
  std::string out = "<|im_start|>assistant\n";
  if (is_after_last_query && (is_last || !parts.reasoning.empty())) {
    out += "<think>\n" + std::string(strip_newlines(parts.reasoning, true, true)) + "\n</think>\n\n" +
           std::string(strip_newlines(parts.content, true, false));
  } else {
    out += parts.content;
  }
  return out + "<|im_end|>\n";
}

std::string render_qwen3(std::span<const chat_message> messages, bool add_prompt) {
  std::string out;
  if (!messages.empty() && messages[0].role == "system") out += "<|im_start|>system\n" + messages[0].content + "<|im_end|>\n";
  std::size_t last_query = messages.empty() ? 0 : messages.size() - 1;
  for (std::size_t i = messages.size(); i > 0; --i) {
    if (messages[i - 1].role == "user" && !is_tool_response(messages[i - 1].content)) {
      last_query = i - 1;
      break;
    }
  }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const chat_message& m = messages[i];
    const bool is_last = i + 1 == messages.size();
    if (m.role == "user" || (m.role == "system" && i != 0)) {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    } else if (m.role == "assistant") {
      out += render_qwen3_assistant(m, i > last_query, is_last);
    } else if (m.role == "tool") {
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
      if (is_last || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    }
  }
  if (add_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace

result<std::string> chat_template::try_render_family(std::span<const chat_message> messages,
                                                     bool add_generation_prompt, std::string_view bos,
                                                     std::string_view eos) const {
  switch (family_) {
    case chat_family::llama_2: return render_llama_2(messages, bos, eos);
    case chat_family::llama_3: return render_llama_3(messages, bos, add_generation_prompt || always_generation_prompt_);
    case chat_family::mistral: return render_mistral(messages, bos, eos, space_after_eos_);
    case chat_family::chatml: return render_chatml(messages, add_generation_prompt, default_system_);
    case chat_family::qwen3: return render_qwen3(messages, add_generation_prompt);
    case chat_family::zephyr: return render_zephyr(messages, eos, add_generation_prompt);
    case chat_family::jinja: break;
  }
  return make_error(errc::internal, "chat template: unknown family");
}

}  // namespace inflight

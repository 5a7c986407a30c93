#pragma once
/// Chat templates: the model's own Jinja template (tokenizer_config.json's
/// `chat_template`), executed by core/model/template; or one of the hand-written renderers
/// for the common model families, chosen by name (`model.chat_template`), for models
/// without a template, and as the fallback, recognised by its markers, for a template
/// the interpreter cannot run.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/error.hpp"
#include "core/model/template/jinja_template.hpp"

namespace inflight {

/// One turn of a conversation.
struct chat_message {
  std::string role;  ///< "system", "user", "assistant" (some families also take "tool")
  std::string content;
};

/// Everything a chat template renders from: what transformers' apply_chat_template
/// passes to the model's template.
struct chat_input {
  /// [{role, content, ...}]: content a string, null or a list of parts; assistant
  /// messages may carry tool_calls, tool messages tool_call_id and name.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  ///< null: no tools; else the JSON array of tool definitions
  bool add_generation_prompt = true;
  /// The prompt ends right after the final message's text (transformers' and vLLM's
  /// continue_final_message): the rendering is cut there, so the model continues it.
  bool continue_final_message = false;
  std::string bos, eos;          ///< the bos_token / eos_token texts
  /// Further variables the template may read (enable_thinking, date_string, ...).
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  /// The time strftime_now formats (seconds since the epoch, UTC); nullopt: now. Tests fix it.
  std::optional<std::int64_t> fixed_now;
};

enum class chat_family { llama_2, llama_3, mistral, chatml, qwen3, zephyr, jinja };

class chat_template {
 public:
  /// A renderer by its name: "llama-2", "llama-3", "mistral", "chatml", "qwen3", "zephyr".
  static result<chat_template> try_from_name(std::string_view name);
  /// The renderer for a Jinja template text, recognised by the family's distinctive markers.
  static result<chat_template> try_detect(std::string_view jinja_source);
  /// The template text itself, executed. Errors (invalid_argument) when it does not parse,
  /// naming the line and column.
  static result<chat_template> try_from_jinja(std::string_view jinja_source);
  /// A model's template: executed when it parses and renders a one-message conversation,
  /// without tools or with one (templates made for tool calls may refuse to render
  /// without tools); otherwise the family renderer try_detect recognises. `warning` (may
  /// be null) says why the template itself is not used. Errors as try_detect when neither works.
  static result<chat_template> try_from_model(std::string_view jinja_source, std::string* warning);

  /// The prompt text for `messages`. `bos` / `eos` are the tokenizer's BOS / EOS token
  /// texts. Errors (errc::invalid_argument) are the ones the family's template raises,
  /// e.g. roles that do not alternate user / assistant.
  result<std::string> try_render(std::span<const chat_message> messages, bool add_generation_prompt,
                                 std::string_view bos, std::string_view eos) const;
  /// The prompt text for `input`. Errors (invalid_argument) carry the template's
  /// raise_exception message or the reason it failed; family renderers read each
  /// message's role and text and refuse tools (errc::unsupported).
  result<std::string> try_render(const chat_input& input) const;

  chat_family family() const { return family_; }
  std::string_view name() const;
  /// The system prompt used when the conversation has none (ChatML variants, e.g. Qwen2).
  const std::string& default_system() const { return default_system_; }

 private:
  explicit chat_template(chat_family family) : family_(family) {}
  result<std::string> try_render_family(std::span<const chat_message> messages, bool add_generation_prompt,
                                        std::string_view bos, std::string_view eos) const;
  chat_family family_;
  std::optional<jinja::jinja_template> jinja_;  ///< the model's template (family_ == jinja)
  bool always_generation_prompt_ = false;  ///< Llama-3 base template: the assistant header is always added
  bool space_after_eos_ = false;           ///< Mistral v0.1: "</s> " between turns
  std::string default_system_;
};

/// The names try_from_name accepts, as "llama-2" | "llama-3" | ... for error messages.
std::string chat_template_names();

/// Python's str.strip() white space trimmed from both ends (Jinja's `trim` / `.strip()`).
std::string trim_white_space(std::string_view text);

}  // namespace inflight

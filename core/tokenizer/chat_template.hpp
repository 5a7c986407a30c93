#pragma once
/// Chat templates: hand-written renderers for the common model families, chosen by
/// recognising tokenizer_config.json's Jinja `chat_template` or by name. There is no
/// general Jinja engine: an unrecognised template is an error naming the setting
/// (`model.chat_template`) that picks a renderer explicitly.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace inflight {

/// One turn of a conversation.
struct chat_message {
  std::string role;  ///< "system", "user", "assistant" (some families also take "tool")
  std::string content;
};

enum class chat_family { llama_2, llama_3, mistral, chatml, qwen3, zephyr };

class chat_template {
 public:
  /// A renderer by its name: "llama-2", "llama-3", "mistral", "chatml", "qwen3", "zephyr".
  static result<chat_template> try_from_name(std::string_view name);
  /// The renderer for a Jinja template text, recognised by the family's distinctive markers.
  static result<chat_template> try_detect(std::string_view jinja_source);

  /// The prompt text for `messages`. `bos` / `eos` are the tokenizer's BOS / EOS token
  /// texts. Errors (errc::invalid_argument) are the ones the family's template raises,
  /// e.g. roles that do not alternate user / assistant.
  result<std::string> try_render(std::span<const chat_message> messages, bool add_generation_prompt,
                                 std::string_view bos, std::string_view eos) const;

  chat_family family() const { return family_; }
  std::string_view name() const;
  /// The system prompt used when the conversation has none (ChatML variants, e.g. Qwen2).
  const std::string& default_system() const { return default_system_; }

 private:
  explicit chat_template(chat_family family) : family_(family) {}
  chat_family family_;
  bool always_generation_prompt_ = false;  ///< Llama-3 base template: the assistant header is always added
  bool space_after_eos_ = false;           ///< Mistral v0.1: "</s> " between turns
  std::string default_system_;
};

/// The names try_from_name accepts, as "llama-2" | "llama-3" | ... for error messages.
std::string chat_template_names();

/// Python's str.strip() white space trimmed from both ends (Jinja's `trim` / `.strip()`).
std::string trim_white_space(std::string_view text);

}  // namespace inflight

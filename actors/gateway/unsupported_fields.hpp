#pragma once
/// Request fields of OpenAI's and vLLM's completion and chat APIs that would change the
/// output and that inflight does not implement. A request that sets one is a 400
/// (invalid_request_error, code "unsupported", `param` naming the field), never an
/// answer that silently differs from what was asked. A value that means "off" (null,
/// false, the default, an empty list) is accepted. Fields nobody defines are ignored,
/// as OpenAI does; docs/http-api.md lists both.

#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

#include "actors/gateway/json_fields.hpp"

namespace inflight::gateway {

/// When a known field counts as set (asks for something not implemented).
enum class set_when {
  not_null,    ///< any value but null
  is_true,     ///< anything but null and false
  is_false,    ///< false (the field's default, true, is what inflight does)
  not_empty,   ///< anything but null, "", [] and {}
  above_one,   ///< anything but null and 1
  above_zero,  ///< anything but null and 0
  not_text,    ///< a list holding anything but "text" (modalities)
  is_object,   ///< an object (function_call naming a function; "none" / "auto" are fine)
};

/// One refused field: where it applies and why it is refused.
struct unsupported_field {
  std::string_view name;
  bool in_completions;  ///< /v1/completions (and WebSocket prompts)
  bool in_chat;         ///< /v1/chat/completions (and WebSocket messages)
  set_when when;
  std::string_view why;  ///< what inflight does not do
};

/// Every refused field.
std::span<const unsupported_field> unsupported_fields();

/// The first refused field `body` sets, as a 400.
opt_error check_unsupported_fields(const nlohmann::json& body, bool is_chat);

}  // namespace inflight::gateway

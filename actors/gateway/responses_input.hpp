#pragma once
/// The items of a /v1/responses `input` (and of a stored conversation) as chat messages.
///   message               {type?: "message", role, content}: a message of that role; content
///                         a string or a non-empty list of input_text / output_text /
///                         refusal parts
///   function_call         {call_id, name, arguments}: a tool call of an assistant message
///                         (consecutive calls, and calls right after an assistant message,
///                         join that message)
///   function_call_output  {call_id, output}: a tool message (output a string or text parts)
///   reasoning             dropped: the template writes no earlier reasoning
/// Anything else (images, files, audio, built-in tool calls, item references) is a 400
/// naming the field: `input[3].content[1].type`.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"

namespace inflight::gateway {

/// `input` as a list of items: a string is one user message.
api_result<nlohmann::json> try_input_items(const nlohmann::json& input);

/// Appends the chat messages of `items` to `messages`; every item is checked, and an
/// error names it under `path` (`input[2].role`).
std::optional<api_error> try_append_messages(const nlohmann::json& items, const std::string& path,
                                             nlohmann::json& messages);

}  // namespace inflight::gateway

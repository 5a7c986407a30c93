#pragma once
/// The conversation of an Anthropic Messages request (`system`, `messages`) as chat
/// messages (OpenAI's shape), each error a 400 naming the exact field
/// (`messages[2].content[1].tool_use_id`):
///   system     a string or a list of text blocks: one system message first
///   user       content: a string or a non-empty list of `text` and `tool_result` blocks;
///              each tool_result becomes a `tool` message (tool_call_id = tool_use_id,
///              content: a string or text blocks; is_error prefixes "Error: "), in order
///   assistant  content: a string or a non-empty list of `text`, `tool_use` (id, name,
///              input object: a tool call whose arguments are input as JSON text),
///              `thinking` and `redacted_thinking` blocks (checked, then left out of the
///              prompt: a chat template does not read earlier turns' reasoning)
/// `image` and `document` blocks are refused (this server serves text models), as is
/// every other block type. Extra block fields (cache_control, citations) are ignored.

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"

namespace inflight::gateway {

/// The chat `messages` list of a Messages request body (an object), in the client's key
/// order (a tool_use's input becomes arguments text with its keys as sent).
api_result<nlohmann::ordered_json> try_chat_messages(const nlohmann::ordered_json& body);

}  // namespace inflight::gateway

#pragma once
/// Chat `messages` checked against OpenAI's schema, each error a 400 that names the
/// exact field (`messages[2].content[0].type`):
///   system, developer  content: a string or a non-empty list of text parts
///   user               content: a string or a non-empty list of text parts (image,
///                      audio and file parts are refused: this server serves text models)
///   assistant          content: a string, a list of text / refusal parts, or null or
///                      absent when tool_calls (or the legacy function_call) are given
///   tool               content as user; tool_call_id: a string
/// `name` is optional (a string). A developer message is rendered as a system message.

#include <vector>

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"
#include "core/model/template/chat_template.hpp"

namespace inflight::gateway {

/// The messages as the chat template sees them (role and text).
api_result<std::vector<chat_message>> try_parse_messages(const nlohmann::json& messages);

/// Messages already checked by try_parse_messages as a template reads them: every field
/// the client sent, in its order (parse the body with ordered_json to keep it), with role
/// developer as system, content as text (content parts joined; null where the client sent
/// none), and tool_calls whose arguments are JSON objects (the string OpenAI sends,
/// parsed, keeping its key order; kept as a string when it is not a JSON object).
nlohmann::ordered_json template_messages(const nlohmann::ordered_json& messages);

}  // namespace inflight::gateway

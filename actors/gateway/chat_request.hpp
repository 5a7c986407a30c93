#pragma once
/// What a chat request hands its chat template, read once for chat completions, a
/// WebSocket generate with messages and /tokenize with messages, so all three render the
/// same prompt:
///   messages, tools           with the key order of the request text
///   add_generation_prompt     default true
///   continue_final_message    vLLM's: the prompt ends inside the final message (no
///                             generation prompt; both true is a 400)
///   chat_template_kwargs      an object of further template variables; it may not set
///                             messages, tools or documents
///   reasoning_effort          "low" | "medium" | "high", the template variable of that name
///   chat_template             a template text rendered instead of the model's

#include <optional>

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"
#include "actors/gateway/served_model.hpp"
#include "actors/gateway/tool_request.hpp"
#include "core/model/template/chat_template.hpp"

namespace inflight::gateway {

/// The body text parsed again keeping its key order (nlohmann::json sorts keys), for the
/// parts a template sees; null when the text is not a JSON object.
nlohmann::ordered_json parse_ordered_body(const std::string& text);

/// A chat request's template input and, when it sent one, its own template.
struct chat_prompt_request {
  chat_input input;
  std::optional<chat_template> request_template;  ///< `chat_template`, parsed
};

/// Reads the fields above from `body` (messages already checked by try_parse_messages);
/// `ordered` is the same body with its key order (null: `body`'s sorted order is used).
/// Every error is a 400 naming its field.
api_result<chat_prompt_request> try_parse_chat_prompt(const nlohmann::json& body, const nlohmann::ordered_json& ordered,
                                                      const tool_request& tools);

/// Prompt token ids of the request: its own template when it sent one (a render error is
/// a 400 naming chat_template), else the model's (a 400 naming messages).
api_result<std::vector<token_id>> try_tokenize_chat_prompt(const served_model& m, const chat_prompt_request& r);

}  // namespace inflight::gateway

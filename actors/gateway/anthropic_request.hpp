#pragma once
/// An Anthropic Messages request (POST /v1/messages, /v1/messages/count_tokens) as the
/// chat-completions body the one completion path runs. Pure: no engine, no socket.
///   model, system, messages        -> model, messages (anthropic_messages.hpp)
///   max_tokens (required)          -> max_tokens
///   stop_sequences                 -> stop
///   temperature, top_p, top_k      -> the same
///   stream                         -> stream
///   tools [{name, description, input_schema}]
///                                  -> tools [{type: function, function: {name, description, parameters}}]
///   tool_choice {type: auto | any | tool (name) | none, disable_parallel_tool_use}
///                                  -> tool_choice auto | required | {function: {name}} | none, parallel_tool_calls
///   thinking {type: enabled, budget_tokens} | adaptive | between_tools
///                                  -> chat_template_kwargs.enable_thinking true (and thinking_budget
///                                     where the model's reasoning markers are single tokens)
///   thinking {type: disabled}      -> chat_template_kwargs.enable_thinking false
///   output_config.format, output_format {type: json_schema, schema}
///                                  -> response_format json_schema
///   output_config.effort           -> reasoning_effort (xhigh and max as high)
///   a final assistant message      -> continue_final_message (prefill: the answer continues it)
///   metadata, service_tier, ...    ignored
/// inflight's own fields (guided_*, structured_outputs, min_p, seed, priority, ...) pass
/// through unchanged. Server tools (web search, bash, computer, ...) are refused.

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"
#include "actors/gateway/served_model.hpp"

namespace inflight::gateway {

/// What the body is for: a message (max_tokens required) or a token count (no output:
/// max_tokens and stream are not read).
enum class messages_use { create, count_tokens };

/// The chat-completions body of a Messages request body (an object), both in the client's
/// key order (parse_ordered_body; tool schemas and tool_use inputs keep it, and the
/// translated tools are written {type, function: {name, description, parameters}} as
/// OpenAI's are); every error a 400 that names the Messages field.
api_result<nlohmann::ordered_json> try_translate_messages(const nlohmann::ordered_json& body, const served_model& m,
                                                          messages_use use);

/// An error of the chat request a translated body made, in the Messages request's names:
/// `tools[i].function.parameters` is `tools[i].input_schema`, `tools[i].function.name` is
/// `tools[i].name`, `response_format` is `output_config.format`.
api_error messages_param_error(api_error e);

}  // namespace inflight::gateway

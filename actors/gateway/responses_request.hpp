#pragma once
/// A /v1/responses body (OpenAI's Responses API) checked and translated into the chat
/// completions body that the one completion path parses (try_parse_request):
///   instructions            a system message first
///   input                   a string (one user message) or a list of items:
///     message               role user | assistant | system | developer; content a string or
///                           input_text / output_text / refusal parts (input_image,
///                           input_file, input_audio: a 400 naming the part)
///     function_call         an assistant message's tool call {call_id, name, arguments}
///     function_call_output  a tool message {call_id, output}
///     reasoning             accepted, left out of the prompt
///   tools                   function tools {type, name, description, parameters, strict};
///                           built-in tools (web_search, file_search, mcp, ...) are a 400
///   tool_choice             auto | none | required | {type: "function", name}
///   text.format             text | json_schema {name, schema, strict} | json_object
///                           -> response_format
///   reasoning.effort        -> reasoning_effort
///   max_output_tokens       -> max_tokens
///   temperature, top_p, parallel_tool_calls, stream, user: as in chat
/// inflight's extension fields (structured outputs, guided_*, top_k, seed, priority, ...)
/// pass through unchanged. Every 400 names the Responses field (`input[2].content[0].type`).

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"
#include "actors/gateway/responses_store.hpp"

namespace inflight::gateway {

struct responses_request {
  nlohmann::json chat_body;    ///< for try_parse_request(chat_body, api_kind::chat, model, ordered_chat_body)
  /// chat_body in the client's key order where a model or a grammar reads it: tools
  /// ({type, function: {name, description, parameters, strict}}, the client's schemas),
  /// the text.format schema, the extension fields.
  nlohmann::ordered_json ordered_chat_body;
  /// The request fields the Response object repeats (instructions, tools, tool_choice,
  /// temperature, top_p, parallel_tool_calls, text, reasoning, max_output_tokens,
  /// previous_response_id, store, metadata, truncation, user), with OpenAI's defaults.
  nlohmann::json echo;
  nlohmann::json input_items;  ///< this turn's input as items (a string input: one user message)
  std::shared_ptr<const conversation_turn> previous;  ///< the stored conversation it continues
  bool stream = false;
  bool store = true;
};

/// previous_response_id: nullopt when absent or null; a non-string is a 400.
api_result<std::optional<std::string>> try_previous_response_id(const nlohmann::json& body);

/// The 404 of a previous_response_id that is not stored (never stored, deleted,
/// evicted or past server.responses_store_ttl_s).
api_error previous_response_not_found(const std::string& id);

/// Checks and translates a body; `previous`: the conversation previous_response_id
/// continues (null: none), whose items come before `input`; `ordered`: the same body in
/// the client's key order (null: sorted).
api_result<responses_request> try_parse_responses(const nlohmann::json& body,
                                                  std::shared_ptr<const conversation_turn> previous,
                                                  const nlohmann::ordered_json& ordered = nullptr);

/// A 400 of the chat parser (try_parse_request) as a Responses client reads it: the
/// fields it names are the Responses fields they came from (messages -> input,
/// max_tokens -> max_output_tokens, response_format -> text.format,
/// tools[i].function.name -> tools[i].name, reasoning_effort -> reasoning.effort).
api_error to_responses_error(api_error e);

}  // namespace inflight::gateway

#pragma once
/// Parsing and validation of OpenAI-style request bodies (/v1/completions,
/// /v1/chat/completions, WebSocket "generate") into engine requests. Pure functions:
/// no sockets, no engine. Unknown fields are ignored; a field of the wrong type or out
/// of range is a 400 that names it.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/engine_api.hpp"
#include "actors/gateway/errors.hpp"
#include "actors/gateway/served_model.hpp"
#include "actors/gateway/tool_request.hpp"

namespace inflight::gateway {

enum class api_kind {
  completion,  ///< /v1/completions: `prompt`, max_tokens defaults to 16
  chat,        ///< /v1/chat/completions: `messages`, max_tokens defaults to the rest of the context
  websocket,   ///< WebSocket generate: `prompt` (as completion) or `messages` (as chat)
};

struct openai_request {
  api_kind kind = api_kind::completion;
  bool is_chat = false;                        ///< the prompt came from `messages`
  std::vector<std::vector<token_id>> prompts;  ///< one per prompt (a chat has one)
  generate_request base;                       ///< everything but the prompt
  int n = 1;                                   ///< choices per prompt
  bool stream = false;
  bool include_usage = false;                  ///< stream_options.include_usage
  bool echo = false;                           ///< completions: the prompt text starts the output
  bool has_logprobs = false;                   ///< logprobs were asked for
  int num_top_logprobs = 0;                    ///< top alternatives per token (0..20)
  std::string user;
  tool_request tools;                          ///< chat: tools, tool_choice, parallel_tool_calls
  /// Chat with the model's reasoning parser: the output's reasoning is split from its
  /// answer; `is_reasoning_open`: the rendered prompt opened the reasoning already.
  std::optional<reasoning_markers> reasoning;
  bool is_reasoning_open = false;

  int num_choices() const { return static_cast<int>(prompts.size()) * n; }
  /// The engine request of choice `index` (prompt index * n + j): its own prompt, and
  /// seed + j when a seed was given so that n choices differ but stay reproducible.
  generate_request choice_request(int index) const;
};

/// Parses a request body; `body` must already be valid JSON.
/// `ordered`: the same body parsed keeping its key order (parse_ordered_body), which the
/// chat template sees in messages, tools and chat_template_kwargs; null: the sorted order.
api_result<openai_request> try_parse_request(const nlohmann::json& body, api_kind kind, const served_model& model,
                                             const nlohmann::ordered_json& ordered = nullptr);

/// Parses a body text: malformed JSON, a non-object or invalid UTF-8 is a 400.
api_result<nlohmann::json> try_parse_json(const std::string& text);

/// Prompt token ids of a /tokenize body ({"prompt"} or {"messages"}, "add_special_tokens").
/// With messages it renders what chat completions would (tools, tool_choice, the template
/// fields); `ordered` as for try_parse_request.
api_result<std::vector<token_id>> try_parse_tokenize(const nlohmann::json& body, const served_model& model,
                                                     const nlohmann::ordered_json& ordered = nullptr);

/// Token ids of a /detokenize body ({"tokens": [ids]}).
api_result<std::vector<token_id>> try_parse_detokenize(const nlohmann::json& body, const served_model& model);

}  // namespace inflight::gateway

#pragma once
/// OpenAI response shapes: completions, chat completions, their streaming chunks,
/// usage, logprobs and the model list. Pure functions of their arguments.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/engine_api.hpp"
#include "actors/gateway/served_model.hpp"

namespace inflight::gateway {

/// The fields every object of one response shares.
struct response_meta {
  std::string id;        ///< "cmpl-..." / "chatcmpl-..."
  std::int64_t created = 0;
  std::string model;
};

/// A fresh response id: `prefix` followed by 24 random hex digits.
std::string make_response_id(const std::string& prefix);
/// Seconds since the Unix epoch.
std::int64_t unix_now();

/// With drafted tokens (speculative decoding), completion_tokens_details says how many
/// were kept (accepted_prediction_tokens) and refuted (rejected_prediction_tokens).
nlohmann::json usage_json(int prompt_tokens, int completion_tokens, int cached_tokens = 0, int draft_tokens = 0,
                          int accepted_tokens = 0);

/// Completions logprobs {tokens, token_logprobs, top_logprobs, text_offset} for `tokens`;
/// `prev` is the token before the first (token texts depend on it), `text_offset` the
/// offset of the first token's text in the choice's text. `num_top` trims the top lists.
nlohmann::json completion_logprobs(const served_model& m, token_id prev, const std::vector<sampled_token>& tokens,
                                   int num_top, int text_offset);
/// Chat logprobs content entries [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}].
nlohmann::json chat_logprobs_content(const served_model& m, token_id prev, const std::vector<sampled_token>& tokens,
                                     int num_top);

/// One streaming chunk of /v1/completions ("text_completion").
nlohmann::json completion_chunk(const response_meta& meta, int index, const std::string& text,
                                const nlohmann::json& logprobs, const char* finish_reason);
/// One streaming chunk of /v1/chat/completions ("chat.completion.chunk"); `delta` is
/// {"role": ...} / {"content": ...} / {}.
nlohmann::json chat_chunk(const response_meta& meta, int index, const nlohmann::json& delta,
                          const nlohmann::json& logprobs, const char* finish_reason);
/// The final usage chunk of a stream (choices: []).
nlohmann::json usage_chunk(const response_meta& meta, bool is_chat, const nlohmann::json& usage);

/// One finished choice of a non-streaming response.
struct choice_result {
  std::string text;
  nlohmann::json logprobs;  ///< null when not asked for
  std::string finish_reason;
  /// vLLM's stop_reason: the stop string (or stop_token_ids entry) that ended the text;
  /// null otherwise (an end-of-sequence token, a length, a tool call).
  nlohmann::json stop_reason = nullptr;
  /// Chat: the message's tool_calls ([tool_call_json(...)]); null = none.
  nlohmann::json tool_calls = nullptr;
  bool is_content_null = false;  ///< chat: the message was calls only (content null)
  /// Chat with a reasoning parser: the model's reasoning (message.reasoning_content and
  /// message.reasoning; null when it wrote none). None: the fields are left out.
  std::optional<std::string> reasoning = std::nullopt;
};

/// One entry of message.tool_calls: {id, type: "function", function: {name, arguments}}.
nlohmann::json tool_call_json(const std::string& id, const std::string& name, const std::string& arguments);
/// One piece of call `index` as delta.tool_calls lists it: the first piece carries id,
/// type and name (`id` not empty), later ones a piece of the arguments.
nlohmann::json tool_call_piece(int index, const std::string& id, const std::optional<std::string>& name,
                               const std::string& arguments);
/// A streaming delta with that one piece: {"tool_calls": [piece]}.
nlohmann::json tool_call_delta(int index, const std::string& id, const std::optional<std::string>& name,
                               const std::string& arguments);
/// The first delta of a chat stream: {"role": "assistant", "content": "", "refusal": null}.
nlohmann::json chat_role_delta();

/// {"object": "text_completion", choices: [{index, text, logprobs, finish_reason}], usage}.
nlohmann::json completion_response(const response_meta& meta, const std::vector<choice_result>& choices,
                                   const nlohmann::json& usage);
/// {"object": "chat.completion", choices: [{index, message, logprobs, finish_reason}], usage};
/// message: {role, content, refusal: null[, reasoning_content, reasoning][, tool_calls]}.
nlohmann::json chat_response(const response_meta& meta, const std::vector<choice_result>& choices,
                             const nlohmann::json& usage);

/// GET /v1/models.
nlohmann::json models_list(const served_model& m);

}  // namespace inflight::gateway

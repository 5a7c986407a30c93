#pragma once
/// The Responses API's shape over a chat call (output_shape): the Response object of a
/// call that does not stream, and the typed SSE events of one that does, each
/// `event: <type>\ndata: {..., "sequence_number": n}\n\n`:
///
///   response.created, response.in_progress                       (the role chunk)
///   per output item, in the order the model wrote them:
///     reasoning      output_item.added, content_part.added (reasoning_text),
///                    reasoning_text.delta..., reasoning_text.done, content_part.done,
///                    output_item.done
///     message        output_item.added, content_part.added (output_text),
///                    output_text.delta..., output_text.done, content_part.done,
///                    output_item.done
///     function_call  output_item.added, function_call_arguments.delta...,
///                    function_call_arguments.done, output_item.done
///   response.completed | response.incomplete (finish "length": max_output_tokens)
///   or, on an error after the start: error, then response.failed
///
/// A finished response is stored (responses_store) when the request asked for it, with
/// the conversation it ends, for previous_response_id and GET /v1/responses/{id}.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/gateway/output_shape.hpp"
#include "actors/gateway/responses_request.hpp"
#include "actors/gateway/responses_store.hpp"

namespace inflight::gateway {

/// What every Response object of one call shares.
struct response_head {
  std::string id;          ///< "resp_..."
  std::int64_t created_at = 0;
  std::string model;
  nlohmann::json echo;     ///< responses_request::echo
};

/// A Response object: `status` completed | incomplete | failed | in_progress; `usage` as
/// usage_json writes it (chat names; null: left out, as while in progress);
/// `incomplete_details` for incomplete, `error` for failed, null otherwise.
nlohmann::json response_object(const response_head& head, const std::string& status, const nlohmann::json& output,
                               const nlohmann::json& usage, const nlohmann::json& error = nullptr,
                               int num_reasoning_tokens = 0);

/// Chat usage {prompt_tokens, completion_tokens, ...} as the Responses API names it.
nlohmann::json responses_usage(const nlohmann::json& chat_usage, int num_reasoning_tokens);

/// The output items of a chat.completion body's first choice: a reasoning item (when the
/// model reasoned), a message item (when it wrote text or made no call), one
/// function_call item per tool call.
nlohmann::json output_items_of(const nlohmann::json& chat_completion);

class responses_shape final : public output_shape {
 public:
  /// `count_tokens`: the tokens of a text (reasoning_tokens); `store`: where a finished
  /// response goes when the request's `store` is true.
  responses_shape(response_head head, const responses_request& request, responses_store& store,
                  std::function<int(const std::string&)> count_tokens);

  std::string on_chunk(const nlohmann::json& chunk) override;
  std::string on_stream_end(const nlohmann::json& usage) override;
  std::string on_stream_error(const api_error& e) override;
  call_output on_response(const nlohmann::json& body) override;
  call_output on_error(const api_error& e) override;

 private:
  enum class item_kind { none, reasoning, message, call };

  /// `event: type` with the payload's type and sequence_number set.
  std::string event(const char* type, nlohmann::json payload);
  std::string start();
  std::string open_item(item_kind kind, nlohmann::json item);
  std::string add_text(item_kind kind, const std::string& text);
  std::string add_call(const nlohmann::json& piece);
  std::string close_item();
  nlohmann::json item_ref() const;
  void keep(const nlohmann::json& response, const nlohmann::json& output);

  response_head head_;
  nlohmann::json input_items_;
  std::shared_ptr<const conversation_turn> previous_;
  bool is_stored_ = true;
  responses_store& store_;
  std::function<int(const std::string&)> count_tokens_;

  // The stream so far.
  bool is_started_ = false;
  std::int64_t num_events_ = 0;
  nlohmann::json output_ = nlohmann::json::array();  ///< items done
  item_kind open_ = item_kind::none;
  nlohmann::json item_;      ///< the open item
  std::string text_;         ///< its text (reasoning, message) or arguments (call)
  std::string reasoning_;    ///< every reasoning text, for reasoning_tokens
  std::string finish_reason_;
};

}  // namespace inflight::gateway

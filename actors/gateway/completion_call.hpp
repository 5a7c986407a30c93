#pragma once
/// One /v1/completions or /v1/chat/completions call, or one WebSocket `generate`: submits
/// its choices (prompts x n) to the engine and turns their events into text deltas,
/// logprobs, tool-call deltas and finish reasons (finish_name()), in one place for every
/// transport; only the shapes differ: SSE chunks or one JSON body (OpenAI), or
/// `token` / `done` / `error` messages (WebSocket: one message per output, the tool
/// calls a chat's output parsed as in its `done`).
/// Runs on the connection's strand (events arrive through posting_sink); knows no sockets.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/gateway/errors.hpp"
#include "actors/gateway/gateway_call.hpp"
#include "actors/gateway/gateway_state.hpp"
#include "actors/gateway/openai_request.hpp"
#include "actors/gateway/openai_response.hpp"
#include "actors/gateway/output_shape.hpp"
#include "actors/gateway/posting_sink.hpp"
#include "actors/gateway/tool_chunks.hpp"

namespace inflight::gateway {

class completion_call final : public gateway_call, public std::enable_shared_from_this<completion_call> {
 public:
  using output = call_output;
  using emit_fn = std::function<void(output)>;

  /// `ws_id`: the WebSocket id a `generate` message named (its request's kind is
  /// api_kind::websocket); null for HTTP.
  completion_call(gateway_state& state, openai_request request, post_fn post, emit_fn emit,
                  nlohmann::json ws_id = nullptr);

  /// Another API's shape over this chat call (the Responses and Messages APIs): set
  /// before try_start; every chunk, body and error goes through it.
  void set_shape(std::shared_ptr<output_shape> shape) { shape_ = std::move(shape); }

  /// Submits every choice. On error nothing was emitted and nothing stays queued: the
  /// caller answers with the error. On success a stream's first events (the chat role,
  /// echoed prompts) have been emitted.
  std::optional<api_error> try_start();
  /// The client went away: cancels the choices still running (each finishes within a step).
  void cancel() override;
  /// Shutdown gave up on the call: as cancel(), but its choices end with "abort".
  void abort() override;
  /// A slow reader: while paused, a stream's tokens are held per choice (as text and
  /// token ids, not as events) and sent as one chunk or message per choice by resume().
  /// The session pauses while its session_writer is over its limits.
  void pause() override { is_paused_ = true; }
  void resume() override;
  bool is_paused() const override { return is_paused_; }
  bool is_streaming() const { return request_.stream; }
  bool is_done() const { return num_finished_ == int(choices_.size()) && !choices_.empty(); }

 private:
  struct choice_state {
    request_id id = 0;
    bool is_finished = false;
    std::string text;
    token_id prev = -1;               ///< last token, for logprob token texts
    nlohmann::json logprobs;          ///< accumulated (non-streaming)
    finish_event finish;
    int num_sent_tokens = 0;          ///< token ids sent so far (a WebSocket token message's index)
    std::string held_text;            ///< streamed while paused, not yet sent
    std::vector<sampled_token> held_tokens;
    std::vector<token_id> held_ids;
    std::optional<tool_chunk_writer> tool_writer;  ///< chat with tools, streaming: calls read as they come
    std::optional<tool_call_stream> ws_tools;      ///< the same over the WebSocket (token messages)
    std::vector<std::string> ws_call_ids;          ///< ids of the calls streamed, reused in done
    std::optional<reasoning_splitter> splitter;    ///< chat with a reasoning parser
    std::string reasoning;                         ///< the reasoning so far (text holds the answer)
  };

  /// A WebSocket token message; with tools, its text is the content part and call pieces
  /// ride along as `tool_calls` (OpenAI's delta.tool_calls entries).
  nlohmann::json ws_token(choice_state& c, const std::string& text, const std::vector<token_id>& token_ids,
                          const nlohmann::json& logprobs, bool is_final);
  void on_token(int index, const token_event& ev);
  void on_finish(int index, const finish_event& ev);
  void emit_start();
  /// A chat chunk: an SSE event, or what the shape makes of it.
  void emit_chunk(nlohmann::json chunk);
  /// `text` of choice `c` split into reasoning and answer (all answer without a parser);
  /// `is_final` flushes what the splitter held.
  reasoning_delta split_output(choice_state& c, const std::string& text, bool is_final);
  void emit_delta(int index, const std::string& text, const std::vector<sampled_token>& logprobs,
                  const char* finish_reason, const std::vector<token_id>& token_ids = {});
  void emit_ws_end();
  void emit_tool_delta(int index, const std::string& text, const nlohmann::json& logprobs, const char* finish_reason);
  choice_result chat_result(const choice_state& c) const;
  void finish_all();
  bool is_ws() const { return request_.kind == api_kind::websocket; }
  /// The name a choice's finish goes by: a cancel that shutdown asked for is an abort.
  const char* finish_name_of(const finish_event& ev) const;
  void flush_held(int index);
  nlohmann::json logprobs_of(choice_state& c, const std::vector<sampled_token>& tokens);
  std::string prompt_text(int index) const;

  gateway_state& state_;
  engine_api& engine_;
  const served_model& model_;
  openai_request request_;
  post_fn post_;
  emit_fn emit_;
  response_meta meta_;
  std::vector<choice_state> choices_;
  nlohmann::json ws_id_;
  std::shared_ptr<output_shape> shape_;
  int num_finished_ = 0;
  bool is_cancelled_ = false;
  bool is_aborted_ = false;
  bool is_paused_ = false;
};

}  // namespace inflight::gateway

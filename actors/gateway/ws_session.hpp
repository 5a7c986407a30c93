#pragma once
/// One WebSocket connection at /v1/ws: many concurrent requests multiplexed by a
/// client-chosen id (protocol: docs/websocket.md). Reads and writes run on the
/// connection's strand; engine events are posted to it. A generate message runs as a
/// completion_call (the HTTP path: one place turns engine events into messages). The
/// send queue (session_writer) is bounded by server.ws_max_queued_messages and
/// server.max_stream_buffer_bytes: past either, the generations pause and hold their
/// tokens, sent as one message per request once the queue has room, so a slow reader
/// costs memory per live request, not per token, and never blocks the engine. A bad
/// frame gets an error message; the socket stays up.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include "actors/gateway/edge_stream.hpp"
#include "actors/gateway/errors.hpp"
#include "actors/gateway/gateway_state.hpp"
#include "actors/gateway/model_table.hpp"
#include "actors/gateway/embed_call.hpp"
#include "actors/gateway/score_call.hpp"
#include "actors/gateway/session_writer.hpp"
#include "actors/gateway/ws_message.hpp"

namespace inflight::gateway {

class ws_session final : public session_base, public std::enable_shared_from_this<ws_session> {
 public:
  ws_session(edge_stream&& stream, model_table& models);
  /// Accepts the upgrade `req` and starts reading.
  void run(boost::beast::http::request<boost::beast::http::string_body> req);
  void stop() override;
  void abort_requests() override;

 private:
  enum class phase {
    accepting,  ///< the upgrade is being answered
    open,       ///< reading messages, writing answers
    closing,    ///< stopped with nothing left to send: the close frame is on its way
    lost,       ///< the connection failed or closed
  };
  /// A request that runs under a client's id: a generation (completion_call) or a
  /// rerank / embed (score_call, embed_call).
  struct live_request {
    nlohmann::json id;
    std::shared_ptr<gateway_call> call;
    bool is_generation = false;  ///< its done message comes from the call, cancelled or not
    /// This session's number for the call: output of an earlier call under the same id
    /// (one cancelled, whose events were still on their way) never reaches a later one.
    std::uint64_t serial = 0;
  };

  /// The live request under `key`, when it is the call numbered `serial`.
  live_request* find_live(const std::string& key, std::uint64_t serial);

  void on_accept(boost::beast::error_code ec);
  void do_read();
  void on_read(boost::beast::error_code ec);
  /// A duplicate id or a shutdown: the error to refuse `msg` with.
  std::optional<api_error> check_new(const ws_message& msg) const;
  void handle_generate(const ws_message& msg);
  void handle_rerank(const ws_message& msg);
  void handle_embed(const ws_message& msg);
  /// Registers a rerank or embed call under `msg`'s id and starts it.
  template <class Call, class Request>
  void start_json_call(gateway_state& state, const ws_message& msg, Request request);
  void on_generation_output(const std::string& key, std::uint64_t serial, call_output out);
  void on_call_done(const std::string& key, std::uint64_t serial, api_result<nlohmann::json> out);
  void handle_cancel(const std::string& key);
  void end_live(const std::string& key);

  void send_error(const nlohmann::json& id, const api_error& e);
  void send(const nlohmann::json& msg);
  session_writer::handlers write_handlers();
  void maybe_close_after_stop();
  void connection_lost();

  boost::beast::websocket::stream<edge_stream> ws_;
  boost::beast::flat_buffer read_buffer_;
  model_table& models_;  ///< each message chooses its model by its `model` field
  gateway_state& state_;  ///< the first model's: the settings, the session registry, shutdown
  std::map<std::string, live_request> live_;
  std::uint64_t next_serial_ = 1;
  session_writer writer_;  ///< one message per write; over its limits the generations pause
  phase phase_ = phase::accepting;
  bool is_stopping_ = false;  ///< the server asked to close once every request has ended
};

}  // namespace inflight::gateway

#pragma once
/// One WebSocket connection at /v1/ws: many concurrent requests multiplexed by a
/// client-chosen id (protocol: docs/websocket.md). Reads and writes run on the
/// connection's strand; engine events are posted to it. The send queue is bounded by
/// server.ws_max_queued_messages: when it is full, a request's queued token messages
/// are merged into one, so a slow reader costs memory per live request, not per token,
/// and never blocks the engine. A bad frame gets an error message; the socket stays up.

#include <deque>
#include <map>
#include <memory>
#include <string>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"
#include "actors/gateway/gateway_state.hpp"
#include "actors/gateway/embed_call.hpp"
#include "actors/gateway/score_call.hpp"
#include "actors/gateway/ws_message.hpp"

namespace inflight::gateway {

class ws_session final : public session_base, public std::enable_shared_from_this<ws_session> {
 public:
  ws_session(boost::asio::ip::tcp::socket&& socket, gateway_state& state);
  /// Accepts the upgrade `req` and starts reading.
  void run(boost::beast::http::request<boost::beast::http::string_body> req);
  void stop() override;
  void abort_requests() override;

 private:
  struct live_request {
    request_id engine_id = 0;
    nlohmann::json id;
    token_id prev = -1;          ///< last token, for logprob token texts
    bool has_logprobs = false;
    int num_top_logprobs = 0;
    /// A rerank or embed message: the call that runs its documents' or inputs' engine requests.
    std::shared_ptr<gateway_call> call{};
  };
  /// A queued message: token messages stay structured so that they can be merged.
  struct outgoing {
    std::string key;             ///< live id key ("" for other messages)
    bool is_token = false;
    nlohmann::json body;         ///< the message (token: its fields, merged in place)
  };

  void on_accept(boost::beast::error_code ec);
  void do_read();
  void on_read(boost::beast::error_code ec);
  void handle_generate(const ws_message& msg);
  void handle_rerank(const ws_message& msg);
  void handle_embed(const ws_message& msg);
  /// Registers a rerank or embed call under `msg`'s id and starts it.
  template <class Call, class Request>
  void start_json_call(const ws_message& msg, Request request);
  void on_call_done(const std::string& key, api_result<nlohmann::json> out);
  void handle_cancel(const std::string& key);
  void cancel_live(const live_request& live);
  void on_token(const std::string& key, const token_event& ev);
  void on_finish(const std::string& key, const finish_event& ev);

  void send_error(const nlohmann::json& id, const api_error& e);
  void enqueue(outgoing msg);
  void do_write();
  void on_write(boost::beast::error_code ec);
  void maybe_close_after_stop();
  void connection_lost();

  boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
  boost::beast::flat_buffer read_buffer_;
  gateway_state& state_;
  std::map<std::string, live_request> live_;
  std::deque<outgoing> queue_;
  std::string writing_;
  bool is_writing_ = false;
  bool is_open_ = false;
  bool is_lost_ = false;
  bool is_stopping_ = false;
  bool is_closing_ = false;
  bool is_aborting_ = false;  ///< shutdown cancelled the requests: they end with "abort"
};

}  // namespace inflight::gateway

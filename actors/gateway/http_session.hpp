#pragma once
/// One HTTP/1.1 connection: reads requests (keep-alive, server.idle_timeout_s, body
/// limit server.max_body_bytes), answers simple routes, runs completion calls (SSE over
/// chunked transfer encoding when streaming), scoring and embedding calls, and hands WebSocket
/// upgrades to ws_session.
/// Everything runs on the connection's strand. While a call runs, a read on the socket
/// watches for the client going away: it cancels the call's requests. An SSE response
/// is written through session_writer (backpressure: server.max_stream_buffer_bytes).

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "actors/gateway/completion_call.hpp"
#include "actors/gateway/edge_stream.hpp"
#include "actors/gateway/embed_call.hpp"
#include "actors/gateway/score_call.hpp"
#include "actors/gateway/gateway_state.hpp"
#include "actors/gateway/model_table.hpp"
#include "actors/gateway/routes.hpp"
#include "actors/gateway/session_writer.hpp"

namespace inflight::gateway {

class http_session final : public session_base, public std::enable_shared_from_this<http_session> {
 public:
  http_session(edge_stream&& stream, model_table& models);
  /// Runs the TLS handshake first when the stream has TLS (within server.idle_timeout_s).
  void run();
  void stop() override;
  void abort_requests() override;

 private:
  using request_t = boost::beast::http::request<boost::beast::http::string_body>;

  /// Where the connection is: one phase at a time.
  enum class phase {
    reading,    ///< waiting for (or reading) a request
    calling,    ///< a call runs; its answer has not started
    replying,   ///< a whole response is being written
    streaming,  ///< an SSE response streams as the call produces it
    ending,     ///< the stream's last bytes are queued
    lingering,  ///< half-closed after a last reply: draining what the client still sends
    closed,     ///< closed, or the socket was handed to a WebSocket or events session
  };
  /// What the request in progress asked for; set once per request.
  struct exchange {
    unsigned version = 11;
    bool is_keep_alive = true;
    bool is_head = false;
    bool is_sse = false;      ///< the answer is an SSE stream
    bool is_chunked = true;   ///< the stream uses chunked encoding (HTTP/1.1)
  };

  void on_handshake(boost::beast::error_code ec);
  void do_read();
  void on_read(boost::beast::error_code ec);
  void handle(request_t&& req);
  /// Points state_ at the model the request is for (several models: its body's `model`
  /// field, or ?model= for the engine events), or answers it for all models at once
  /// (/v1/models, /metrics, /health); an unknown model is a 404.
  api_result<std::optional<http_reply>> choose_model(route_kind kind, std::string_view path, const request_t& req);
  void start_generation(route_kind kind, const std::string& body);
  /// GET /v1/engine/events; `engine`: its ?engine= parameter.
  void start_engine_events(const std::optional<std::string>& engine);
  /// POST /v1/models/{name}/load | unload: answered once the pool has done it.
  void start_model_action(std::string_view path);
  void start_scoring(route_kind kind, const std::string& body);
  void start_embedding(const std::string& body);
  /// POST /v1/messages: a chat call in Anthropic's shape, errors included.
  void start_messages(const std::string& body);
  /// POST /v1/responses: a chat call in the Responses shape (responses_call.hpp).
  void start_responses(const std::string& body);
  /// Runs a call: on success the watch starts; on failure its error is the reply (in
  /// the shape `reply_of` gives it).
  void start_call(std::shared_ptr<gateway_call> call, const std::function<std::optional<api_error>()>& try_start,
                  http_reply (*reply_of)(const api_error&) = error_reply);
  std::function<void(api_result<nlohmann::json>)> json_emitter();
  post_fn poster();
  void send_reply(http_reply reply);
  void on_reply_written(boost::beast::error_code ec, bool keep_alive);
  void next_request();

  void on_output(call_output out);
  void begin_stream();
  void push_stream(const std::string& bytes);
  session_writer::handlers stream_handlers();

  void start_watch();
  void on_watch(boost::beast::error_code ec, const std::string& bytes);
  void client_gone();
  void linger_close();
  void close();

  edge_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  model_table& models_;
  gateway_state* state_;  ///< the model of the request being answered (the first between requests)
  session_writer writer_;  ///< an SSE response's bytes: queue, backpressure, stall timer
  disconnect_watch watch_;
  boost::asio::steady_timer linger_timer_;
  std::shared_ptr<gateway_call> call_;  ///< the completion, scoring or embedding call in progress
  std::shared_ptr<void> reply_;         ///< the response being written
  std::string early_stream_;            ///< what a stream emitted while starting, before its header
  exchange exchange_;
  phase phase_ = phase::reading;
  bool is_stopping_ = false;  ///< the server asked to close once the response in progress is done
};

}  // namespace inflight::gateway

#pragma once
/// One HTTP/1.1 connection: reads requests (keep-alive, server.idle_timeout_s, body
/// limit server.max_body_bytes), answers simple routes, runs completion calls (SSE over
/// chunked transfer encoding when streaming), scoring and embedding calls, and hands WebSocket
/// upgrades to ws_session.
/// Everything runs on the connection's strand. While a generation runs, a read on the
/// socket watches for the client going away: it cancels the call's requests.

#include <array>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "actors/gateway/completion_call.hpp"
#include "actors/gateway/embed_call.hpp"
#include "actors/gateway/score_call.hpp"
#include "actors/gateway/gateway_state.hpp"
#include "actors/gateway/routes.hpp"

namespace inflight::gateway {

class http_session final : public session_base, public std::enable_shared_from_this<http_session> {
 public:
  http_session(boost::asio::ip::tcp::socket&& socket, gateway_state& state);
  void run();
  void stop() override;
  void abort_requests() override;

 private:
  using request_t = boost::beast::http::request<boost::beast::http::string_body>;

  void do_read();
  void on_read(boost::beast::error_code ec);
  void handle(request_t&& req);
  void start_generation(route_kind kind, const std::string& body);
  void start_engine_events();
  void start_scoring(route_kind kind, const std::string& body);
  void start_embedding(const std::string& body);
  /// Runs a call that answers with one JSON body (scoring, embeddings).
  template <class Call>
  void start_json_call(std::shared_ptr<Call> call);
  std::function<void(api_result<nlohmann::json>)> json_emitter();
  void send_reply(http_reply reply);
  void on_reply_written(boost::beast::error_code ec, bool keep_alive);
  void next_request();

  void on_output(call_output out);
  void write_stream_header();
  void write_stream();
  void on_stream_written(boost::beast::error_code ec);
  void arm_stall_timer();

  void start_watch();
  void on_watch(boost::beast::error_code ec, std::size_t num_bytes);
  void client_gone();
  void linger_close();
  void close();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  gateway_state& state_;
  boost::asio::steady_timer stall_timer_;
  std::shared_ptr<gateway_call> call_;  ///< the completion or scoring call in progress
  std::shared_ptr<void> reply_;  ///< the response being written
  bool keep_alive_ = true;
  unsigned version_ = 11;
  bool is_head_ = false;

  // A streaming response: SSE bytes queue in pending_ while a write is in flight, so a
  // slow client gets fewer, larger chunks and never blocks the engine.
  std::shared_ptr<boost::beast::http::response<boost::beast::http::empty_body>> stream_header_;
  std::shared_ptr<boost::beast::http::response_serializer<boost::beast::http::empty_body>> stream_serializer_;
  std::string pending_, writing_;
  bool is_streaming_ = false;
  bool is_chunked_ = true;
  bool is_header_sent_ = false;
  bool is_writing_ = false;
  bool is_last_queued_ = false;
  bool is_last_written_ = false;

  bool is_watching_ = false;
  bool is_gone_ = false;
  bool is_stopping_ = false;
  bool is_closed_ = false;
  bool is_lingering_ = false;
  std::array<char, 1024> watch_buf_{};
};

}  // namespace inflight::gateway

#pragma once
/// A connection's byte stream at the edge: plain TCP, or TLS over it when the server has
/// a certificate (server.tls_cert_file / tls_key_file). One type, so that http_session,
/// ws_session and events_session are written once for HTTP and HTTPS, WS and WSS.
///
///   edge_stream ── plain ──> beast::tcp_stream
///              └── tls ───> beast::ssl_stream<beast::tcp_stream>
///
/// It is an AsyncReadStream / AsyncWriteStream (the calls go to whichever stream it
/// holds) and a WebSocket next layer (teardown below). tcp() is the TCP stream under it
/// for timeouts, socket options and closing.

#include <cstddef>
#include <utility>
#include <variant>

#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/beast/websocket/teardown.hpp>

namespace inflight::gateway {

class edge_stream {
 public:
  using tcp_stream = boost::beast::tcp_stream;
  using tls_stream = boost::beast::ssl_stream<boost::beast::tcp_stream>;
  using executor_type = tcp_stream::executor_type;
  using error_code = boost::system::error_code;

  /// Plain TCP.
  explicit edge_stream(tcp_stream&& tcp) : stream_(std::move(tcp)) {}
  /// TLS with `ctx` (which outlives the stream); the handshake is async_handshake's.
  edge_stream(tcp_stream&& tcp, boost::asio::ssl::context& ctx)
      : stream_(std::in_place_type<tls_stream>, std::move(tcp), ctx) {}
  edge_stream(edge_stream&&) = default;
  edge_stream& operator=(edge_stream&&) = default;

  executor_type get_executor() noexcept { return tcp().get_executor(); }
  bool is_tls() const { return std::holds_alternative<tls_stream>(stream_); }
  /// The TCP stream under the TLS layer (or the stream itself).
  tcp_stream& tcp() {
    if (auto* tls = std::get_if<tls_stream>(&stream_)) return boost::beast::get_lowest_layer(*tls);
    return std::get<tcp_stream>(stream_);
  }

  template <class Buffers, class Token>
  auto async_read_some(const Buffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(error_code, std::size_t)>(
        [this](auto handler, const Buffers& b) {
          std::visit([&](auto& s) { s.async_read_some(b, std::move(handler)); }, stream_);
        },
        token, buffers);
  }

  template <class Buffers, class Token>
  auto async_write_some(const Buffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(error_code, std::size_t)>(
        [this](auto handler, const Buffers& b) {
          std::visit([&](auto& s) { s.async_write_some(b, std::move(handler)); }, stream_);
        },
        token, buffers);
  }

  /// TLS: the server's side of the handshake; plain: completes at once (posted).
  template <class Token>
  auto async_handshake(Token&& token) {
    return boost::asio::async_initiate<Token, void(error_code)>(
        [this](auto handler) {
          if (auto* tls = std::get_if<tls_stream>(&stream_)) {
            tls->async_handshake(boost::asio::ssl::stream_base::server, std::move(handler));
          } else {
            boost::asio::post(get_executor(), [h = std::move(handler)]() mutable { std::move(h)(error_code{}); });
          }
        },
        token);
  }

  /// What a WebSocket timeout does (boost::beast::close_socket): close the TCP socket.
  friend void beast_close_socket(edge_stream& s) { s.tcp().close(); }

  /// The WebSocket close: a TLS close_notify first where there is TLS.
  friend void teardown(boost::beast::role_type role, edge_stream& s, error_code& ec) {
    using boost::beast::websocket::teardown;
    std::visit([&](auto& inner) { teardown(role, inner, ec); }, s.stream_);
  }
  template <class Handler>
  friend void async_teardown(boost::beast::role_type role, edge_stream& s, Handler&& handler) {
    using boost::beast::websocket::async_teardown;
    std::visit([&](auto& inner) { async_teardown(role, inner, std::move(handler)); }, s.stream_);
  }

 private:
  std::variant<tcp_stream, tls_stream> stream_;
};

}  // namespace inflight::gateway

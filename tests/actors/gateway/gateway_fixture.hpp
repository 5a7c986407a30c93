#pragma once
// A real server on a free loopback port, and small blocking clients (HTTP, raw TCP,
// WebSocket) for the gateway tests.

#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <thread>
#include <string>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include "actors/gateway/server.hpp"
#include "tests/actors/engine/engine_fixture.hpp"

namespace inflight::test {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using nlohmann::json;

/// An engine for stories260K and a server in front of it on 127.0.0.1, port 0.
struct served {
  std::unique_ptr<engine> eng;
  std::unique_ptr<gateway::server> srv;
  int port = 0;

  explicit served(deployment d) {
    d.server.host = "127.0.0.1";
    d.server.port = 0;
    eng = start_engine(d);
    auto s = gateway::server::try_start(*eng, {false, "test"});
    if (!s) FAIL(s.error().message);
    srv = std::move(*s);
    port = srv->port();
  }
  ~served() {
    srv.reset();  // shuts down the engine too
    eng.reset();
  }
};

/// True when the stories260K files are there (else the test returns early; fails in CI).
inline bool has_stories() { return !shared_file("models/stories260K/stories260K.bin").empty(); }

struct http_answer {
  int status = 0;
  std::string content_type;
  std::string body;
  std::map<std::string, std::string> headers;
  json body_json() const { return json::parse(body); }
};

/// One request on a fresh connection; the whole (de-chunked) response body.
inline http_answer http_call(int port, http::verb method, const std::string& target, const std::string& body = {},
                             const std::string& content_type = "application/json") {
  net::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!body.empty()) req.set(http::field::content_type, content_type);
  req.body() = body;
  req.prepare_payload();
  http::write(stream, req);
  beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1ull << 30);
  http::read(stream, buf, parser);
  const auto& res = parser.get();
  http_answer out;
  out.status = static_cast<int>(res.result_int());
  out.content_type = std::string(res[http::field::content_type]);
  for (const auto& f : res) out.headers[std::string(f.name_string())] = std::string(f.value());
  out.body = res.body();
  beast::error_code ignored;
  stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  return out;
}

inline http_answer post_json(int port, const std::string& target, const json& body) {
  return http_call(port, http::verb::post, target, body.dump());
}

inline http_answer get(int port, const std::string& target) { return http_call(port, http::verb::get, target); }

/// Sends raw bytes (optionally half-closing) and returns every byte the server sends
/// until it closes or `seconds` pass.
inline std::string raw_exchange(int port, const std::string& bytes, bool half_close, double seconds = 5.0) {
  net::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  beast::error_code ec;
  net::write(stream.socket(), net::buffer(bytes), ec);
  if (half_close) stream.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
  std::string out;
  stream.expires_after(std::chrono::milliseconds(static_cast<int>(seconds * 1000)));
  char buf[4096];
  for (;;) {
    const std::size_t n = stream.read_some(net::buffer(buf), ec);
    out.append(buf, n);
    if (ec) break;
  }
  return out;
}

/// Value of `inflight:<name>` in /metrics: `name` is a metric name (its first sample)
/// or a full series with labels (`request_success_total{model_name="m",finished_reason="abort"}`).
inline double metric(int port, const std::string& name) {
  const auto text = get(port, "/metrics").body;
  const bool has_labels = name.find('{') != std::string::npos;
  const std::string key = "\ninflight:" + name + (has_labels ? " " : "{");
  const auto pos = text.find(key);
  if (pos == std::string::npos) FAIL("metric " << name << " missing");
  const auto space = text.find(' ', has_labels ? pos + key.size() - 1 : text.find("} ", pos) + 1);
  return std::stod(text.substr(space + 1, text.find('\n', space) - space - 1));
}

/// Polls until a metric has `value` (gauges update once per engine step).
inline bool metric_reaches(int port, const std::string& name, double value, double seconds = 10.0) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (metric(port, name) == value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

/// Polls until running requests and KV usage are back to 0 (or `seconds` pass).
inline bool engine_idle(int port, double seconds = 10.0) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (metric(port, "num_requests_running") == 0 && metric(port, "num_requests_waiting") == 0 &&
        metric(port, "kv_cache_usage_perc") == 0)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

/// A blocking WebSocket client.
struct ws_client {
  net::io_context ioc;
  beast::websocket::stream<beast::tcp_stream> ws{ioc};

  explicit ws_client(int port) {
    ws.next_layer().connect(
        net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
    ws.handshake("127.0.0.1", "/v1/ws");
  }
  void send(const json& msg) { send_text(msg.dump()); }
  void send_text(const std::string& text) {
    ws.text(true);
    ws.write(net::buffer(text));
  }
  void send_binary(const std::string& bytes) {
    ws.binary(true);
    ws.write(net::buffer(bytes));
  }
  json receive() {
    beast::flat_buffer buf;
    ws.read(buf);
    return json::parse(beast::buffers_to_string(buf.data()));
  }
};

}  // namespace inflight::test

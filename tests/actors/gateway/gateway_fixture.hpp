#pragma once
// A real server on a free loopback port, and small blocking clients (HTTP, raw TCP,
// WebSocket) for the gateway tests. The clients are compiled once, in gateway_fixture.cpp:
// Beast's templates are costly to compile in every test file.

#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <thread>
#include <string>
#include <utility>
#include <vector>

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

using header_list = std::vector<std::pair<std::string, std::string>>;

/// One request on a fresh connection, with `headers` beside Host and Content-Type; the
/// whole (de-chunked) response body.
http_answer http_call(int port, http::verb method, const std::string& target, const std::string& body = {},
                      const std::string& content_type = "application/json", const header_list& headers = {});
http_answer post_json(int port, const std::string& target, const json& body);
http_answer get(int port, const std::string& target);

/// Sends raw bytes (optionally half-closing) and returns every byte the server sends
/// until it closes or `seconds` pass.
std::string raw_exchange(int port, const std::string& bytes, bool half_close, double seconds = 5.0);

/// Value of `inflight:<name>` in /metrics: `name` is a metric name (its first sample)
/// or a full series with labels (`request_success_total{model_name="m",finished_reason="abort"}`).
double metric(int port, const std::string& name);

/// Polls until a metric has `value` (gauges update once per engine step).
bool metric_reaches(int port, const std::string& name, double value, double seconds = 10.0);

/// Polls until running requests and KV usage are back to 0 (or `seconds` pass).
bool engine_idle(int port, double seconds = 10.0);

/// A blocking WebSocket client.
struct ws_client {
  net::io_context ioc;
  beast::websocket::stream<beast::tcp_stream> ws{ioc};

  explicit ws_client(int port);
  void send(const json& msg) { send_text(msg.dump()); }
  void send_text(const std::string& text);
  void send_binary(const std::string& bytes);
  json receive();
};

}  // namespace inflight::test

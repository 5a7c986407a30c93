// API keys and HTTPS / WSS at the edge (actors/gateway/api_keys.hpp, edge_stream.hpp):
// a real server on loopback with random weights; clients with and without keys, over
// plain TCP and over TLS with a throwaway certificate made at test time.
#include <catch2/catch.hpp>

#include <fstream>

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include "tests/actors/gateway/gateway_fixture.hpp"
#include "tests/actors/tls_fixture.hpp"

using namespace inflight;
using namespace inflight::test;
namespace ssl = boost::asio::ssl;
namespace websocket = boost::beast::websocket;

namespace {

using headers_t = std::vector<std::pair<std::string, std::string>>;

template <class Stream>
http_answer exchange(Stream& stream, http::verb method, const std::string& target, const headers_t& headers,
                     const std::string& body) {
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [name, value] : headers) req.set(name, value);
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  req.body() = body;
  req.prepare_payload();
  http::write(stream, req);
  beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  http::read(stream, buf, parser);
  const auto& res = parser.get();
  http_answer out;
  out.status = static_cast<int>(res.result_int());
  for (const auto& f : res) out.headers[std::string(f.name_string())] = std::string(f.value());
  out.body = res.body();
  return out;
}

/// One request on a fresh connection, plain or (with `tls`) over TLS.
http_answer call(int port, http::verb method, const std::string& target, const headers_t& headers = {},
                 const std::string& body = {}, ssl::context* tls = nullptr) {
  net::io_context ioc;
  const net::ip::tcp::endpoint ep(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port));
  if (!tls) {
    beast::tcp_stream stream(ioc);
    stream.connect(ep);
    return exchange(stream, method, target, headers, body);
  }
  beast::ssl_stream<beast::tcp_stream> stream(ioc, *tls);
  beast::get_lowest_layer(stream).connect(ep);
  stream.handshake(ssl::stream_base::client);
  return exchange(stream, method, target, headers, body);
}

headers_t bearer(const std::string& key) { return {{"Authorization", "Bearer " + key}}; }

const std::string completion_body = R"({"prompt": "Hi", "max_tokens": 2, "temperature": 0, "ignore_eos": true})";

/// A client TLS context that trusts `ca_pem` only.
std::unique_ptr<ssl::context> client_tls(const std::filesystem::path& ca_pem) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  ctx->load_verify_file(ca_pem.string());
  ctx->set_verify_mode(ssl::verify_peer);
  return ctx;
}

/// The 401 of a missing or wrong key: OpenAI's envelope, and WWW-Authenticate.
void check_unauthorized(const http_answer& a) {
  CHECK(a.status == 401);
  CHECK(a.headers.count("WWW-Authenticate") == 1);
  if (a.headers.count("WWW-Authenticate")) CHECK(a.headers.at("WWW-Authenticate") == "Bearer");
  const auto body = json::parse(a.body);
  CHECK(body["error"]["code"] == "invalid_api_key");
  CHECK(body["error"]["type"] == "invalid_request_error");
  CHECK(body["error"]["message"].get<std::string>().size() > 0);
}

/// Reads a WebSocket generation until its done message; returns it.
template <class Ws>
json read_until_done(Ws& ws) {
  for (int i = 0; i < 100; ++i) {
    beast::flat_buffer buf;
    ws.read(buf);
    auto msg = json::parse(beast::buffers_to_string(buf.data()));
    if (msg["type"] == "done" || msg["type"] == "error") return msg;
  }
  return {};
}

}  // namespace

TEST_CASE("edge keys: 401 without or with a wrong key, 200 with each key, /health open", "[gateway][auth]") {
  auto d = dummy_deployment();
  d.server.api_keys = {"sk-first", "sk-second"};
  d.server.api_key_file = (tls_dir("keys") / "keys.txt").string();
  std::ofstream(d.server.api_key_file) << "# a key from the file\nsk-third\n";
  served s(d);
  REQUIRE(s.srv->num_api_keys() == 3);
  for (const auto& path : {"/v1/models", "/version", "/metrics", "/v1/engine/events"}) {
    INFO(path);
    check_unauthorized(call(s.port, http::verb::get, path));
    check_unauthorized(call(s.port, http::verb::get, path, bearer("sk-wrong")));
  }
  check_unauthorized(call(s.port, http::verb::post, "/v1/completions", {}, completion_body));
  check_unauthorized(call(s.port, http::verb::post, "/v1/completions", bearer("sk-firs"), completion_body));
  check_unauthorized(call(s.port, http::verb::post, "/v1/completions", {{"Authorization", "sk-first"}}, completion_body));
  check_unauthorized(call(s.port, http::verb::post, "/v1/chat/completions", bearer("sk-wrong"), "{}"));
  check_unauthorized(call(s.port, http::verb::get, "/no/such/route"));  // no route is revealed without a key
  for (const auto& key : {"sk-first", "sk-second", "sk-third"}) {
    INFO(key);
    CHECK(call(s.port, http::verb::get, "/v1/models", bearer(key)).status == 200);
    const auto done = call(s.port, http::verb::post, "/v1/completions", bearer(key), completion_body);
    CHECK(done.status == 200);
    CHECK(json::parse(done.body)["usage"]["completion_tokens"] == 2);
  }
  CHECK(call(s.port, http::verb::get, "/metrics", bearer("sk-second")).status == 200);
  // Open without a key: /health, and the web UI's page and files (their API calls are not).
  CHECK(call(s.port, http::verb::get, "/health").status == 200);
  CHECK(call(s.port, http::verb::get, "/").status == 200);
  // The key never shows up in an answer.
  CHECK(call(s.port, http::verb::get, "/v1/models", bearer("sk-wrong")).body.find("sk-wrong") == std::string::npos);
}

TEST_CASE("edge keys: metrics_open lets /metrics answer without a key, nothing else", "[gateway][auth]") {
  auto d = dummy_deployment();
  d.server.api_keys = {"sk-only"};
  d.server.metrics_open = true;
  served s(d);
  CHECK(call(s.port, http::verb::get, "/metrics").status == 200);
  check_unauthorized(call(s.port, http::verb::get, "/v1/models"));
}

TEST_CASE("edge keys: no key configured is open as before", "[gateway][auth]") {
  served s(dummy_deployment());
  CHECK(s.srv->num_api_keys() == 0);
  CHECK(call(s.port, http::verb::get, "/v1/models").status == 200);
  CHECK(call(s.port, http::verb::get, "/metrics").status == 200);
  CHECK(call(s.port, http::verb::post, "/v1/completions", {}, completion_body).status == 200);
}

TEST_CASE("edge keys: a WebSocket upgrade without the key is refused with a 401 before upgrading",
          "[gateway][auth][ws]") {
  auto d = dummy_deployment();
  d.server.api_keys = {"sk-ws"};
  served s(d);
  const net::ip::tcp::endpoint ep(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(s.port));
  // The upgrade request a WebSocket client sends, without and with a wrong key: the
  // answer is the 401 itself, not a 101.
  const headers_t upgrade = {{"Upgrade", "websocket"},
                             {"Connection", "Upgrade"},
                             {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                             {"Sec-WebSocket-Version", "13"}};
  check_unauthorized(call(s.port, http::verb::get, "/v1/ws", upgrade));
  auto wrong = upgrade;
  wrong.emplace_back("Authorization", "Bearer sk-nope");
  check_unauthorized(call(s.port, http::verb::get, "/v1/ws", wrong));
  // Beast's client sees the refusal as a declined upgrade.
  {
    net::io_context ioc;
    websocket::stream<beast::tcp_stream> ws(ioc);
    ws.next_layer().connect(ep);
    beast::error_code ec;
    ws.handshake("127.0.0.1", "/v1/ws", ec);
    CHECK(ec == websocket::error::upgrade_declined);
  }
  // With the key: upgraded, and a generation runs.
  net::io_context ioc;
  websocket::stream<beast::tcp_stream> ws(ioc);
  ws.next_layer().connect(ep);
  ws.set_option(websocket::stream_base::decorator(
      [](websocket::request_type& req) { req.set(http::field::authorization, "Bearer sk-ws"); }));
  ws.handshake("127.0.0.1", "/v1/ws");
  ws.write(net::buffer(json{{"type", "generate"}, {"id", 1}, {"prompt", "Hi"}, {"max_tokens", 2}}.dump()));
  const auto done = read_until_done(ws);
  CHECK(done["type"] == "done");
}

TEST_CASE("edge keys: a browser's WebSocket carries its key as a subprotocol, echoed as inflight",
          "[gateway][auth][ws]") {
  auto d = dummy_deployment();
  d.server.api_keys = {"sk-ui/test=1"};
  served s(d);
  const net::ip::tcp::endpoint ep(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(s.port));
  const std::string good = "inflight, inflight.key.c2stdWkvdGVzdD0x";  // base64url of the key
  const std::string wrong = "inflight, inflight.key.c2stdWkvdGVzdD0y";  // "sk-ui/test=2"
  const headers_t upgrade = {{"Upgrade", "websocket"},
                             {"Connection", "Upgrade"},
                             {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                             {"Sec-WebSocket-Version", "13"}};
  auto with_wrong = upgrade;
  with_wrong.emplace_back("Sec-WebSocket-Protocol", wrong);
  check_unauthorized(call(s.port, http::verb::get, "/v1/ws", with_wrong));
  // An Authorization header, when present, is the one that counts.
  auto header_wins = upgrade;
  header_wins.emplace_back("Sec-WebSocket-Protocol", good);
  header_wins.emplace_back("Authorization", "Bearer sk-nope");
  check_unauthorized(call(s.port, http::verb::get, "/v1/ws", header_wins));
  // Plain HTTP routes do not read the subprotocol.
  check_unauthorized(call(s.port, http::verb::get, "/v1/models", {{"Sec-WebSocket-Protocol", good}}));
  // The right key: upgraded, the answer names the `inflight` subprotocol, a generation runs.
  net::io_context ioc;
  websocket::stream<beast::tcp_stream> ws(ioc);
  ws.next_layer().connect(ep);
  ws.set_option(websocket::stream_base::decorator(
      [&](websocket::request_type& req) { req.set(http::field::sec_websocket_protocol, good); }));
  websocket::response_type res;
  ws.handshake(res, "127.0.0.1", "/v1/ws");
  CHECK(res[http::field::sec_websocket_protocol] == "inflight");
  ws.write(net::buffer(json{{"type", "generate"}, {"id", 1}, {"prompt", "Hi"}, {"max_tokens", 2}}.dump()));
  CHECK(read_until_done(ws)["type"] == "done");
}

TEST_CASE("edge tls: HTTPS and WSS with a throwaway certificate, keys checked inside TLS", "[gateway][tls]") {
  const auto dir = tls_dir("edge");
  make_self_signed(dir, "server");
  auto d = dummy_deployment();
  d.server.tls_cert_file = (dir / "server.pem").string();
  d.server.tls_key_file = (dir / "server.key").string();
  d.server.api_keys = {"sk-tls"};
  served s(d);
  CHECK(s.srv->is_tls());
  auto tls = client_tls(dir / "server.pem");
  CHECK(call(s.port, http::verb::get, "/health", {}, {}, tls.get()).status == 200);
  check_unauthorized(call(s.port, http::verb::get, "/v1/models", {}, {}, tls.get()));
  const auto done = call(s.port, http::verb::post, "/v1/completions", bearer("sk-tls"), completion_body, tls.get());
  CHECK(done.status == 200);
  // Keep-alive over TLS: two requests on one connection.
  {
    net::io_context ioc;
    beast::ssl_stream<beast::tcp_stream> stream(ioc, *tls);
    beast::get_lowest_layer(stream).connect(
        net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(s.port)));
    stream.handshake(ssl::stream_base::client);
    CHECK(exchange(stream, http::verb::get, "/v1/models", bearer("sk-tls"), {}).status == 200);
    CHECK(exchange(stream, http::verb::post, "/v1/completions", bearer("sk-tls"), completion_body).status == 200);
  }
  // Streaming (SSE) over TLS ends with [DONE].
  const std::string stream_body = R"({"prompt": "Hi", "max_tokens": 3, "temperature": 0, "stream": true})";
  const auto sse = call(s.port, http::verb::post, "/v1/completions", bearer("sk-tls"), stream_body, tls.get());
  CHECK(sse.status == 200);
  CHECK(sse.body.find("data: [DONE]") != std::string::npos);
  // WSS: the upgrade inside TLS, with the key.
  net::io_context ioc;
  websocket::stream<beast::ssl_stream<beast::tcp_stream>> wss(ioc, *tls);
  beast::get_lowest_layer(wss).connect(
      net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(s.port)));
  wss.next_layer().handshake(ssl::stream_base::client);
  wss.set_option(websocket::stream_base::decorator(
      [](websocket::request_type& req) { req.set(http::field::authorization, "Bearer sk-tls"); }));
  wss.handshake("127.0.0.1", "/v1/ws");
  wss.write(net::buffer(json{{"type", "generate"}, {"id", "w"}, {"prompt", "Hi"}, {"max_tokens", 2}}.dump()));
  CHECK(read_until_done(wss)["type"] == "done");
  wss.close(websocket::close_code::normal);
}

TEST_CASE("edge tls: a plain-text client of an HTTPS server gets no answer, the server keeps serving",
          "[gateway][tls]") {
  const auto dir = tls_dir("plain");
  make_self_signed(dir, "server");
  auto d = dummy_deployment();
  d.server.tls_cert_file = (dir / "server.pem").string();
  d.server.tls_key_file = (dir / "server.key").string();
  served s(d);
  const auto raw = raw_exchange(s.port, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", false, 5.0);
  CHECK(raw.find("HTTP/1.1 200") == std::string::npos);
  auto tls = client_tls(dir / "server.pem");
  CHECK(call(s.port, http::verb::get, "/health", {}, {}, tls.get()).status == 200);
}

TEST_CASE("edge tls: a missing, unreadable or mismatched certificate or key is a clear start-up error",
          "[gateway][tls]") {
  const auto dir = tls_dir("bad");
  make_self_signed(dir, "one");
  make_self_signed(dir, "two");
  std::ofstream(dir / "garbage.pem") << "not a certificate\n";
  const auto one_pem = (dir / "one.pem").string(), one_key = (dir / "one.key").string();
  const auto two_key = (dir / "two.key").string();
  struct bad_case {
    std::string cert, key, expected;
  };
  const std::vector<bad_case> cases = {
      {(dir / "missing.pem").string(), one_key, "server.tls_cert_file"},
      {one_pem, (dir / "missing.key").string(), "server.tls_key_file"},
      {(dir / "garbage.pem").string(), one_key, "not a PEM certificate"},
      {one_pem, (dir / "garbage.pem").string(), "not a PEM private key"},
      {one_pem, two_key, "is not the key of"},
  };
  for (const auto& c : cases) {
    INFO(c.cert << " " << c.key);
    auto d = dummy_deployment();
    d.server.host = "127.0.0.1";
    d.server.port = 0;
    d.server.tls_cert_file = c.cert;
    d.server.tls_key_file = c.key;
    auto eng = start_engine(d);
    auto srv = gateway::server::try_start(*eng, {false, "test"});
    REQUIRE_FALSE(srv.has_value());
    CHECK_THAT(srv.error().message, Catch::Contains(c.expected));
    eng->shutdown(0.0);
  }
}

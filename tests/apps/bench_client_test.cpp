// The bench serve client against a server in the test that answers with bytes the test
// chose: refusals (400, 429, 500, 503) with JSON or HTML bodies, framed by Content-Length,
// chunked or up to the close; streams and whole answers of any size.
#include <catch2/catch.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <memory>
#include <optional>

#include "apps/inflight/bench_client.hpp"
#include "core/bench/server_error.hpp"

using namespace inflight;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

/// One connection: reads the whole request, writes `answer` as it is, then closes.
class canned_connection : public std::enable_shared_from_this<canned_connection> {
 public:
  canned_connection(tcp::socket socket, std::string answer) : socket_(std::move(socket)), answer_(std::move(answer)) {}
  void start() {
    http::async_read(socket_, buffer_, request_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return;
      asio::async_write(self->socket_, asio::buffer(self->answer_), [self](beast::error_code, std::size_t) {
        beast::error_code ignored;
        self->socket_.shutdown(tcp::socket::shutdown_send, ignored);  // ends a body that runs to the close
      });
    });
  }

 private:
  tcp::socket socket_;
  std::string answer_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
};

/// A WebSocket peer that answers the first message with `reply` and waits for the close.
class ws_connection : public std::enable_shared_from_this<ws_connection> {
 public:
  ws_connection(tcp::socket socket, std::string reply) : ws_(std::move(socket)), reply_(std::move(reply)) {}
  void start() {
    ws_.async_accept([self = shared_from_this()](beast::error_code ec) {
      if (ec) return;
      self->ws_.async_read(self->buffer_, [self](beast::error_code ec, std::size_t) {
        if (ec) return;
        self->ws_.text(true);
        self->ws_.async_write(asio::buffer(self->reply_), [self](beast::error_code ec, std::size_t) {
          if (!ec) self->ws_.async_read(self->buffer_, [self](beast::error_code, std::size_t) {});
        });
      });
    });
  }

 private:
  websocket::stream<tcp::socket> ws_;
  std::string reply_;
  beast::flat_buffer buffer_;
};

/// Accepts one connection on a free loopback port and serves it with `Connection`.
template <class Connection>
class one_shot_server {
 public:
  one_shot_server(asio::io_context& ioc, std::string answer)
      : acceptor_(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    acceptor_.async_accept([this, answer = std::move(answer)](beast::error_code ec, tcp::socket socket) {
      if (!ec) std::make_shared<Connection>(std::move(socket), answer)->start();
    });
  }
  std::string port() const { return std::to_string(acceptor_.local_endpoint().port()); }

 private:
  tcp::acceptor acceptor_;
};

/// Sends one request to a server that answers `answer` and returns the client's record.
template <class Connection = canned_connection>
bench::request_record record_for(const std::string& answer, bool use_ws = false) {
  asio::io_context ioc;
  one_shot_server<Connection> server(ioc, answer);
  app::client_target target;
  target.host = "127.0.0.1";
  target.port = server.port();
  target.use_ws = use_ws;
  target.timeout_s = 120.0;  // a guard against a hang, not a speed requirement
  bench::bench_prompt prompt;
  prompt.prompt_ids = {5, 6, 7};
  std::optional<bench::request_record> record;
  app::start_request(ioc, target, prompt, 0, 4, [&](bench::request_record r) { record = std::move(r); });
  ioc.run();
  REQUIRE(record.has_value());
  return *record;
}

std::string head(int status, const std::string& reason, const std::string& type) {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Type: " + type + "\r\n";
}

std::string with_length(int status, const std::string& reason, const std::string& type, const std::string& body) {
  return head(status, reason, type) + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

/// The body cut into chunks of `chunk_bytes` (the last one shorter).
std::string chunked(int status, const std::string& reason, const std::string& type, const std::string& body,
                    std::size_t chunk_bytes) {
  std::string out = head(status, reason, type) + "Transfer-Encoding: chunked\r\n\r\n";
  for (std::size_t pos = 0; pos < body.size(); pos += chunk_bytes) {
    const auto part = body.substr(pos, chunk_bytes);
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", part.size());
    out += size + part + "\r\n";
  }
  return out + "0\r\n\r\n";
}

std::string until_close(int status, const std::string& reason, const std::string& type, const std::string& body) {
  return head(status, reason, type) + "Connection: close\r\n\r\n" + body;
}

const std::string llama_too_long =
    R"({"error":{"code":400,"message":"request (128 tokens) exceeds the available context size (128 tokens), )"
    R"(try increasing it","type":"exceed_context_size_error","n_prompt_tokens":128,"n_ctx":128}})";
const std::string queue_full =
    R"j({"error":{"message":"the waiting queue is full (256 requests)","type":"rate_limit_error","param":null,)j"
    R"j("code":"queue_full"}})j";

/// Four streamed tokens of text, usage, [DONE].
std::string sse_events() {
  std::string out;
  for (const char* t : {"a", "b", "c", "d"}) out += "data: {\"choices\":[{\"index\":0,\"text\":\"" + std::string(t) + "\"}]}\n\n";
  out += "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}\n\n";
  return out + "data: [DONE]\n\n";
}

}  // namespace

TEST_CASE("bench client: a 400 with Content-Length is recorded with the server's message", "[apps][bench]") {
  // llama.cpp's llama-server refusing a prompt longer than a slot's context.
  const auto r = record_for(with_length(400, "Bad Request", "application/json; charset=utf-8", llama_too_long));
  CHECK_FALSE(r.is_success);
  CHECK(r.http_status == 400);
  CHECK(r.error == "HTTP 400: request (128 tokens) exceeds the available context size (128 tokens), try increasing it");
}

TEST_CASE("bench client: a chunked 429 is recorded with the server's message", "[apps][bench]") {
  for (std::size_t chunk_bytes : {std::size_t{7}, std::size_t{4096}}) {
    const auto r = record_for(chunked(429, "Too Many Requests", "application/json", queue_full, chunk_bytes));
    CHECK_FALSE(r.is_success);
    CHECK(r.http_status == 429);
    CHECK(r.error == "HTTP 429: the waiting queue is full (256 requests)");
  }
  const auto r = record_for(with_length(429, "Too Many Requests", "application/json", queue_full));
  CHECK(r.http_status == 429);
  CHECK(r.error == "HTTP 429: the waiting queue is full (256 requests)");
}

TEST_CASE("bench client: a refusal that is not JSON is quoted, framed any way", "[apps][bench]") {
  const std::string html = "<html>\r\n<body>upstream\r\nunavailable</body></html>\r\n";
  const std::string expected = "HTTP 502: <html> <body>upstream unavailable</body></html>";
  for (const auto& answer : {with_length(502, "Bad Gateway", "text/html", html),
                             chunked(502, "Bad Gateway", "text/html", html, 5),
                             until_close(502, "Bad Gateway", "text/html", html)}) {
    const auto r = record_for(answer);
    CHECK(r.http_status == 502);
    CHECK(r.error == expected);
  }
}

TEST_CASE("bench client: an error body of any size trips no limit", "[apps][bench]") {
  // 12 MiB: beyond Beast's default response limit (8 MiB) and the client's own bound
  // on what it keeps of a refusal; the record still has the status and the start.
  const std::string big(12u << 20, 'x');
  for (const auto& answer : {with_length(503, "Service Unavailable", "text/plain", big),
                             chunked(503, "Service Unavailable", "text/plain", big, 1u << 20)}) {
    const auto r = record_for(answer);
    CHECK(r.http_status == 503);
    CHECK(r.error == "HTTP 503: " + std::string(bench::error_excerpt_bytes, 'x'));
  }
}

TEST_CASE("bench client: a stream is timed whether chunked or with Content-Length", "[apps][bench]") {
  for (const auto& answer : {chunked(200, "OK", "text/event-stream", sse_events(), 40),
                             with_length(200, "OK", "text/event-stream", sse_events()),
                             until_close(200, "OK", "text/event-stream", sse_events())}) {
    const auto r = record_for(answer);
    CHECK(r.is_success);
    CHECK(r.error.empty());
    CHECK(r.http_status == 0);
    CHECK(r.output_tokens == 4);
    CHECK(r.prompt_tokens == 3);
    // One gap between each of the four chunks with text.
    CHECK(r.itl_s.size() == 3);
  }
}

TEST_CASE("bench client: an error event in a stream is recorded with its message", "[apps][bench]") {
  const std::string events = "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\ndata: " + queue_full + "\n\n";
  const auto r = record_for(chunked(200, "OK", "text/event-stream", events, 64));
  CHECK_FALSE(r.is_success);
  CHECK(r.http_status == 0);  // the answer itself was a 200
  CHECK(r.error == "the waiting queue is full (256 requests)");
  // llama.cpp's server before it answered 4xx: an `error:` field with the bare error
  // object; an envelope there is read too.
  const std::string bare = R"({"code":400,"message":"context full","type":"exceed_context_size_error"})";
  for (const auto& line : {"error: " + bare, "error: " + llama_too_long}) {
    const auto old = record_for(chunked(200, "OK", "text/event-stream", line + "\n\n", 64));
    CHECK_FALSE(old.is_success);
    CHECK(old.error == (line.size() < 100 ? "context full"
                                          : "request (128 tokens) exceeds the available context size (128 tokens), "
                                            "try increasing it"));
  }
}

TEST_CASE("bench client: a large whole JSON answer (n = 2, logprobs) is read, not refused", "[apps][bench]") {
  // A server that does not stream: 2 choices with 12 MiB of logprobs between them.
  nlohmann::json answer = {{"object", "text_completion"},
                           {"usage", {{"prompt_tokens", 3}, {"completion_tokens", 8}, {"total_tokens", 11}}}};
  for (int i = 0; i < 2; ++i) {
    answer["choices"].push_back({{"index", i}, {"text", "abcd"}, {"finish_reason", "length"},
                                 {"logprobs", {{"tokens", std::vector<std::string>(4, std::string(3u << 19, 't'))}}}});
  }
  const std::string body = answer.dump();
  REQUIRE(body.size() > (8u << 20));
  for (const auto& framed : {with_length(200, "OK", "application/json", body),
                             chunked(200, "OK", "application/json", body, 1u << 16)}) {
    const auto r = record_for(framed);
    CHECK(r.is_success);
    CHECK(r.error.empty());
    CHECK(r.output_tokens == 8);
    CHECK(r.prompt_tokens == 3);
    CHECK(r.itl_s.empty());  // a whole answer is one chunk: its first token is timed at its end
  }
  const auto refused = record_for(with_length(200, "OK", "application/json", R"({"error":{"message":"no"}})"));
  CHECK_FALSE(refused.is_success);
  CHECK(refused.error == "no");
}

TEST_CASE("bench client: WebSocket error messages and refused upgrades carry the server's words", "[apps][bench]") {
  const std::string error_message = R"({"type":"error","id":"0","error":{"message":"the prompt has 3000 tokens",)"
                                    R"("type":"invalid_request_error","param":"prompt","code":"context_length_exceeded"}})";
  const auto r = record_for<ws_connection>(error_message, true);
  CHECK_FALSE(r.is_success);
  CHECK(r.error == "WebSocket error (context_length_exceeded): the prompt has 3000 tokens");
  // A server that refuses the upgrade itself.
  const auto refused = record_for(with_length(429, "Too Many Requests", "application/json", queue_full), true);
  CHECK_FALSE(refused.is_success);
  CHECK(refused.http_status == 429);
  CHECK(refused.error == "HTTP 429: the waiting queue is full (256 requests)");
}

#include "apps/inflight/bench_client.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include <limits>

#include "apps/inflight/bench_report.hpp"
#include "apps/inflight/bench_response_timeline.hpp"
#include "core/bench/server_error.hpp"

namespace inflight::app {
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

result<client_target> parse_url(const std::string& url) {
  client_target t;
  std::string rest = url;
  for (const char* scheme : {"http://", "ws://"}) {
    if (rest.starts_with(scheme)) rest = rest.substr(std::string(scheme).size());
  }
  if (rest.starts_with("https://") || rest.starts_with("wss://") || rest.find("://") != std::string::npos) {
    return make_error(errc::unsupported, url + ": only http:// (and ws://) URLs are supported");
  }
  const auto slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  t.base_path = slash == std::string::npos ? "" : rest.substr(slash);
  while (t.base_path.ends_with('/')) t.base_path.pop_back();
  const auto colon = authority.rfind(':');
  t.host = authority.substr(0, colon);
  t.port = colon == std::string::npos ? "80" : authority.substr(colon + 1);
  if (t.host.empty() || t.port.empty()) return make_error(errc::invalid_argument, url + ": expected http://HOST:PORT");
  return t;
}

std::string request_body(const client_target& t, const bench::bench_prompt& p, int index, int max_tokens) {
  nlohmann::json j;
  if (p.prompt_ids.empty()) j["prompt"] = p.prompt_text;
  else j["prompt"] = p.prompt_ids;
  j["max_tokens"] = max_tokens;
  j["temperature"] = 0;
  j["ignore_eos"] = t.ignore_eos;
  if (!t.model.empty()) j["model"] = t.model;
  if (!t.lora_modules.empty()) j["model"] = t.lora_modules[std::size_t(index) % t.lora_modules.size()];
  if (t.llamacpp_loras > 0) j["lora"] = {{{"id", index % t.llamacpp_loras}, {"scale", 1.0}}};
  if (!p.json_schema.empty()) {
    j["response_format"] = {{"type", "json_schema"},
                            {"json_schema", {{"name", p.tag.empty() ? "output" : p.tag},
                                             {"schema", nlohmann::json::parse(p.json_schema, nullptr, false)}}}};
  }
  if (t.use_ws) {
    j["type"] = "generate";
    j["id"] = std::to_string(index);
  } else {
    j["stream"] = true;
    j["stream_options"] = {{"include_usage", true}};
  }
  return j.dump();
}

namespace {

/// The server's words for an error event or message: the envelope's message, else the JSON itself.
std::string error_text(const nlohmann::json& j) {
  return bench::error_message(j).value_or(bench::one_line_excerpt(j.dump(), bench::error_excerpt_bytes));
}

/// An `error` message of inflight's WebSocket: "WebSocket error (code): message".
std::string ws_error_text(const nlohmann::json& j) {
  std::string text = "WebSocket error";
  if (const auto e = j.find("error"); e != j.end() && e->is_object()) {
    if (const auto code = e->find("code"); code != e->end() && code->is_string()) {
      text += " (" + code->get<std::string>() + ")";
    }
  }
  return text + ": " + error_text(j);
}

/// A request the network failed: past --timeout it timed out (code "timeout").
void finish_failed(response_timeline& timeline, beast::error_code ec, const char* what) {
  const bool is_timeout = ec == beast::error::timeout;
  timeline.finish(std::string(what) + ": " + ec.message(), 0, is_timeout ? "timeout" : "");
}

/// A numeric host needs no resolver: Asio runs every getaddrinfo of an io_context on
/// one background thread, which would serialise the connects of a burst of requests
/// and show up as time to first token.
bool try_numeric_endpoint(const client_target& t, tcp::resolver::results_type& out) {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(t.host, ec);
  if (ec) return false;
  const auto port = static_cast<unsigned short>(std::stoi(t.port));
  out = tcp::resolver::results_type::create(tcp::endpoint(address, port), t.host, t.port);
  return true;
}

/// Bytes of a non-2xx answer kept for its message; an error envelope is far smaller.
constexpr std::size_t max_error_body_bytes = 64 * 1024;
/// Bytes of a 2xx JSON answer (a server that did not stream): n > 1 with logprobs is large.
constexpr std::size_t max_json_answer_bytes = std::size_t{256} << 20;

/// How the body of an answer is read.
enum class answer_kind {
  event_stream,  ///< 2xx server-sent events: parsed as they arrive, never held whole, no size limit
  json,          ///< 2xx application/json: a server that answered without streaming
  error,         ///< not 2xx: the body holds the server's reason
};

answer_kind kind_of(const http::response_header<>& h) {
  if (h.result_int() < 200 || h.result_int() >= 300) return answer_kind::error;
  const auto type = h[http::field::content_type];
  return type.starts_with("application/json") ? answer_kind::json : answer_kind::event_stream;
}

/// POST /v1/completions with stream=true. A 2xx event stream is read as it arrives and
/// split into server-sent events; any other answer is collected whole (up to a bound)
/// and recorded with the server's own words.
class sse_session : public std::enable_shared_from_this<sse_session> {
 public:
  sse_session(asio::io_context& ioc, const client_target& t, std::string body, request_done done)
      : resolver_(ioc), stream_(ioc), target_(t), timeline_(std::move(done)) {
    req_.method(http::verb::post);
    req_.target(t.base_path + "/v1/completions");
    req_.version(11);
    req_.set(http::field::host, t.host + ":" + t.port);
    req_.set(http::field::content_type, "application/json");
    req_.set(http::field::accept, "text/event-stream");
    req_.body() = std::move(body);
    req_.prepare_payload();
    // Bodies are bounded by what consume() keeps, not by the parser. Boost 1.74 takes an
    // unset limit (boost::none) as exceeded by every Content-Length (beast issue 2070),
    // which failed each non-chunked answer in read header: the largest number it is.
    parser_.body_limit(std::numeric_limits<std::uint64_t>::max());
  }

  void run() {
    timeline_.sent();
    if (tcp::resolver::results_type results; try_numeric_endpoint(target_, results)) return on_resolve({}, results);
    resolver_.async_resolve(target_.host, target_.port, beast::bind_front_handler(&sse_session::on_resolve, shared_from_this()));
  }

 private:
  void on_resolve(beast::error_code ec, tcp::resolver::results_type results) {
    if (ec) return fail(ec, "resolve");
    stream_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(target_.timeout_s)));
    stream_.async_connect(results, beast::bind_front_handler(&sse_session::on_connect, shared_from_this()));
  }
  void on_connect(beast::error_code ec, const tcp::endpoint&) {
    if (ec) return fail(ec, "connect");
    stream_.socket().set_option(tcp::no_delay(true), ec);
    http::async_write(stream_, req_, beast::bind_front_handler(&sse_session::on_write, shared_from_this()));
  }
  void on_write(beast::error_code ec, std::size_t) {
    if (ec) return fail(ec, "write");
    http::async_read_header(stream_, buffer_, parser_, beast::bind_front_handler(&sse_session::on_header, shared_from_this()));
  }
  void on_header(beast::error_code ec, std::size_t) {
    if (ec) return fail(ec, "read header");
    kind_ = kind_of(parser_.get().base());
    do_read();
  }
  void do_read() {
    if (parser_.is_done()) return done();
    parser_.get().body().data = buf_;
    parser_.get().body().size = sizeof buf_;
    http::async_read_some(stream_, buffer_, parser_, beast::bind_front_handler(&sse_session::on_read, shared_from_this()));
  }
  void on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::need_buffer) ec = {};
    // A refusal cut short still has its status and the start of its reason.
    if (ec && ec != http::error::end_of_stream && kind_ != answer_kind::error) return fail(ec, "read");
    consume(std::string_view(buf_, sizeof buf_ - parser_.get().body().size));
    if (ec || timeline_.is_finished() || is_over_limit_) return done();
    do_read();
  }

  void consume(std::string_view bytes) {
    if (kind_ == answer_kind::event_stream) return consume_events(bytes);
    const std::size_t limit = kind_ == answer_kind::error ? max_error_body_bytes : max_json_answer_bytes;
    if (bytes.size() > limit - body_.size()) {
      is_over_limit_ = true;
      bytes = bytes.substr(0, limit - body_.size());
    }
    body_.append(bytes);
  }
  void consume_events(std::string_view bytes) {
    for (char c : bytes) if (c != '\r') pending_.push_back(c);
    for (auto end = pending_.find("\n\n"); end != std::string::npos; end = pending_.find("\n\n")) {
      const std::string event = pending_.substr(0, end);
      pending_.erase(0, end + 2);
      for (std::size_t pos = 0; pos < event.size();) {
        const auto eol = std::min(event.find('\n', pos), event.size());
        on_line(std::string_view(event).substr(pos, eol - pos));
        pos = eol + 1;
      }
    }
  }
  /// A `data:` line, or an `error:` line (llama.cpp's server before it answered 4xx).
  void on_line(std::string_view line) {
    const bool is_error = line.starts_with("error:");
    if ((!is_error && !line.starts_with("data:")) || timeline_.is_finished()) return;
    line.remove_prefix(is_error ? 6 : 5);
    while (line.starts_with(' ')) line.remove_prefix(1);
    if (line == "[DONE]") return timeline_.finish();
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (is_error && j.is_object() && !j.contains("error")) j = {{"error", j}};  // a bare error object
    if (j.is_discarded() || !j.is_object()) {
      return timeline_.finish(std::string(is_error ? "error event: " : "unparsable event: ") +
                              bench::one_line_excerpt(line, 80));
    }
    on_completion(j);
  }
  /// One streamed event, or the whole answer of a server that did not stream.
  void on_completion(const nlohmann::json& j) {
    if (j.contains("error")) return timeline_.finish(error_text(j), 0, bench::error_code_name(j));
    const auto choices = j.find("choices");
    if (choices != j.end() && choices->is_array() && !choices->empty()) {
      timeline_.event();
      if (has_output(choices->front())) timeline_.chunk();
      timeline_.output(choices->front(), target_.keep_text);
    }
    if (auto u = j.find("usage"); u != j.end()) timeline_.usage(*u);
  }
  /// A 2xx JSON answer: one completion whose first token is timed at its end.
  void on_json_answer() {
    if (is_over_limit_) {
      return timeline_.finish("the answer is larger than " + std::to_string(max_json_answer_bytes) + " bytes");
    }
    const auto j = nlohmann::json::parse(body_, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      return timeline_.finish("unparsable answer: " + bench::one_line_excerpt(body_, 80));
    }
    on_completion(j);
    timeline_.finish();
  }

  void done() {
    const int status = parser_.get().result_int();
    switch (kind_) {
      case answer_kind::error:
        timeline_.finish(bench::http_error_text(status, body_), status, bench::body_error_code_name(body_));
        break;
      case answer_kind::json: on_json_answer(); break;
      case answer_kind::event_stream: timeline_.finish("the stream ended without [DONE]"); break;
    }
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }
  void fail(beast::error_code ec, const char* what) { finish_failed(timeline_, ec, what); }

  tcp::resolver resolver_;
  beast::tcp_stream stream_;
  client_target target_;
  response_timeline timeline_;
  http::request<http::string_body> req_;
  http::response_parser<http::buffer_body> parser_;
  beast::flat_buffer buffer_;
  char buf_[16384];
  answer_kind kind_ = answer_kind::event_stream;
  std::string pending_;         // event stream: bytes of the event not yet complete
  std::string body_;            // json / error: the answer so far
  bool is_over_limit_ = false;  // json / error: the answer outgrew its bound
};

/// inflight's WebSocket protocol: one generate message, then token / done / error messages.
class ws_session : public std::enable_shared_from_this<ws_session> {
 public:
  ws_session(asio::io_context& ioc, const client_target& t, std::string body, request_done done)
      : resolver_(ioc), ws_(ioc), target_(t), body_(std::move(body)), timeline_(std::move(done)) {}

  void run() {
    timeline_.sent();
    if (tcp::resolver::results_type results; try_numeric_endpoint(target_, results)) return on_resolve({}, results);
    resolver_.async_resolve(target_.host, target_.port, beast::bind_front_handler(&ws_session::on_resolve, shared_from_this()));
  }

 private:
  void on_resolve(beast::error_code ec, tcp::resolver::results_type results) {
    if (ec) return fail(ec, "resolve");
    beast::get_lowest_layer(ws_).expires_after(std::chrono::seconds(30));
    beast::get_lowest_layer(ws_).async_connect(results, beast::bind_front_handler(&ws_session::on_connect, shared_from_this()));
  }
  void on_connect(beast::error_code ec, const tcp::endpoint&) {
    if (ec) return fail(ec, "connect");
    beast::get_lowest_layer(ws_).socket().set_option(tcp::no_delay(true), ec);
    beast::get_lowest_layer(ws_).expires_never();
    auto timeouts = websocket::stream_base::timeout::suggested(beast::role_type::client);
    timeouts.idle_timeout = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(target_.timeout_s));
    ws_.set_option(timeouts);
    ws_.async_handshake(handshake_answer_, target_.host + ":" + target_.port, target_.base_path + "/v1/ws",
                        beast::bind_front_handler(&ws_session::on_handshake, shared_from_this()));
  }
  void on_handshake(beast::error_code ec) {
    // A server that refuses the upgrade (429, 503, 404) says why in its answer's body.
    if (const int status = handshake_answer_.result_int(); ec && status >= 300) {
      return timeline_.finish(bench::http_error_text(status, handshake_answer_.body()), status,
                              bench::body_error_code_name(handshake_answer_.body()));
    }
    if (ec) return fail(ec, "handshake");
    ws_.text(true);
    ws_.async_write(asio::buffer(body_), beast::bind_front_handler(&ws_session::on_write, shared_from_this()));
  }
  void on_write(beast::error_code ec, std::size_t) {
    if (ec) return fail(ec, "write");
    do_read();
  }
  void do_read() { ws_.async_read(buffer_, beast::bind_front_handler(&ws_session::on_read, shared_from_this())); }
  void on_read(beast::error_code ec, std::size_t) {
    if (ec) return fail(ec, "read");
    auto j = nlohmann::json::parse(beast::buffers_to_string(buffer_.data()), nullptr, false);
    buffer_.consume(buffer_.size());
    if (j.is_discarded() || !j.is_object()) return close("unparsable message");
    const std::string type = j.value("type", "");
    if (type == "token") {
      timeline_.event();
      if (has_output(j)) timeline_.chunk();
      timeline_.output(j, target_.keep_text);
      return do_read();
    }
    if (type == "done") {
      timeline_.output(j, false);
      if (auto u = j.find("usage"); u != j.end()) timeline_.usage(*u);
      return close("");
    }
    if (type == "error") return close(ws_error_text(j), bench::error_code_name(j));
    do_read();  // other message types (e.g. a greeting) are not ours
  }
  void close(std::string error, std::string code = {}) {
    timeline_.finish(std::move(error), 0, std::move(code));
    ws_.async_close(websocket::close_code::normal, [self = shared_from_this()](beast::error_code) {});
  }
  void fail(beast::error_code ec, const char* what) { finish_failed(timeline_, ec, what); }

  tcp::resolver resolver_;
  websocket::stream<beast::tcp_stream> ws_;
  websocket::response_type handshake_answer_;
  client_target target_;
  std::string body_;
  response_timeline timeline_;
  beast::flat_buffer buffer_;
};

}  // namespace

void start_request(asio::io_context& ioc, const client_target& target, const bench::bench_prompt& prompt, int index,
                   int max_tokens, request_done done) {
  auto body = request_body(target, prompt, index, max_tokens);
  if (target.use_ws) std::make_shared<ws_session>(ioc, target, std::move(body), std::move(done))->run();
  else std::make_shared<sse_session>(ioc, target, std::move(body), std::move(done))->run();
}

result<std::string> http_get(const client_target& target, const std::string& path) {
  try {
    asio::io_context ioc;
    tcp::resolver resolver(ioc);
    beast::tcp_stream stream(ioc);
    stream.expires_after(std::chrono::seconds(30));
    stream.connect(resolver.resolve(target.host, target.port));
    http::request<http::empty_body> req(http::verb::get, target.base_path + path, 11);
    req.set(http::field::host, target.host + ":" + target.port);
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(max_json_answer_bytes);  // not the parser's default 8 MiB
    http::read(stream, buffer, parser);
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    auto res = parser.release();
    if (res.result_int() < 200 || res.result_int() >= 300) {
      return make_error(errc::io_error, "GET " + path + ": " + bench::http_error_text(res.result_int(), res.body()));
    }
    return std::move(res.body());
  } catch (const std::exception& e) {
    return make_error(errc::io_error, "GET " + path + ": " + e.what());
  }
}

}  // namespace inflight::app

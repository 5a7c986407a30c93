// The blocking clients of gateway_fixture.hpp, compiled once for every gateway test.
#include "tests/actors/gateway/gateway_fixture.hpp"

namespace inflight::test {

http_answer http_call(int port, http::verb method, const std::string& target, const std::string& body,
                      const std::string& content_type, const header_list& headers) {
  net::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!body.empty()) req.set(http::field::content_type, content_type);
  for (const auto& [name, value] : headers) req.set(name, value);
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

http_answer post_json(int port, const std::string& target, const json& body) {
  return http_call(port, http::verb::post, target, body.dump());
}

http_answer get(int port, const std::string& target) { return http_call(port, http::verb::get, target); }

std::string raw_exchange(int port, const std::string& bytes, bool half_close, double seconds) {
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

double metric(int port, const std::string& name) {
  const auto text = get(port, "/metrics").body;
  const bool has_labels = name.find('{') != std::string::npos;
  const std::string key = "\ninflight:" + name + (has_labels ? " " : "{");
  const auto pos = text.find(key);
  if (pos == std::string::npos) FAIL("metric " << name << " missing");
  const auto space = text.find(' ', has_labels ? pos + key.size() - 1 : text.find("} ", pos) + 1);
  return std::stod(text.substr(space + 1, text.find('\n', space) - space - 1));
}

bool metric_reaches(int port, const std::string& name, double value, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (metric(port, name) == value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

bool engine_idle(int port, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (metric(port, "num_requests_running") == 0 && metric(port, "num_requests_waiting") == 0 &&
        metric(port, "kv_cache_usage_perc") == 0)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

ws_client::ws_client(int port) {
  ws.next_layer().connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  ws.handshake("127.0.0.1", "/v1/ws");
}

void ws_client::send_text(const std::string& text) {
  ws.text(true);
  ws.write(net::buffer(text));
}

void ws_client::send_binary(const std::string& bytes) {
  ws.binary(true);
  ws.write(net::buffer(bytes));
}

json ws_client::receive() {
  beast::flat_buffer buf;
  ws.read(buf);
  return json::parse(beast::buffers_to_string(buf.data()));
}

}  // namespace inflight::test

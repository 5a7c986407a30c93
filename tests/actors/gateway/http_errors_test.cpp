// Bad input over real sockets: each gets its documented error, the server stays up and
// no KV block leaks. Also 503s (full queue) and shutdown while streaming.
#include <thread>

#include "actors/gateway/sse.hpp"
#include "tests/actors/gateway/gateway_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

struct bad_request_case {
  std::string name;
  http::verb method;
  std::string target;
  std::string body;
  int status;
  std::string type;
  std::string param;  ///< "" = not checked
};

std::string raw_post(const std::string& target, const std::string& body, std::size_t content_length) {
  return "POST " + target + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(content_length) + "\r\n\r\n" + body;
}

int status_of(const std::string& raw) {
  if (!raw.starts_with("HTTP/1.1 ")) return 0;
  return std::stoi(raw.substr(9, 3));
}

json body_of(const std::string& raw) {
  const auto pos = raw.find("\r\n\r\n");
  return json::parse(raw.substr(pos + 4));
}

}  // namespace

TEST_CASE("gateway http: bad requests get OpenAI errors and the server stays up", "[gateway][http][errors]") {
  if (!has_stories()) return;
  auto d = stories_deployment();
  d.server.max_body_bytes = 4096;
  served s(d);
  const std::string ctx_prompt = json(std::vector<int>(600, 300)).dump();
  const std::vector<bad_request_case> cases = {
      {"malformed JSON", http::verb::post, "/v1/completions", "{\"prompt\": ", 400, "invalid_request_error", ""},
      {"not an object", http::verb::post, "/v1/completions", "[1]", 400, "invalid_request_error", ""},
      {"invalid UTF-8", http::verb::post, "/v1/completions", "{\"prompt\": \"a\xff\xfe\"}", 400, "invalid_request_error", ""},
      {"wrong type", http::verb::post, "/v1/completions", R"({"prompt": "a", "max_tokens": "x"})", 400, "invalid_request_error", "max_tokens"},
      {"huge number", http::verb::post, "/v1/completions", R"({"prompt": "a", "max_tokens": 1e40})", 400, "invalid_request_error", "max_tokens"},
      {"negative max_tokens", http::verb::post, "/v1/completions", R"({"prompt": "a", "max_tokens": -5})", 400, "invalid_request_error", "max_tokens"},
      {"n = 0", http::verb::post, "/v1/completions", R"({"prompt": "a", "n": 0})", 400, "invalid_request_error", "n"},
      {"prompt over the context", http::verb::post, "/v1/completions", "{\"prompt\": " + ctx_prompt + "}", 400, "invalid_request_error", "prompt"},
      {"chat without messages", http::verb::post, "/v1/chat/completions", R"({"prompt": "a"})", 400, "invalid_request_error", "messages"},
      {"unknown model", http::verb::post, "/v1/completions", R"({"prompt": "a", "model": "gpt-4"})", 404, "not_found_error", "model"},
      {"oversize body", http::verb::post, "/v1/completions", "{\"prompt\": \"" + std::string(8000, 'a') + "\"}", 413, "invalid_request_error", ""},
      {"unknown route", http::verb::get, "/v2/nothing", "", 404, "not_found_error", ""},
      {"wrong method", http::verb::get, "/v1/chat/completions", "", 405, "method_not_allowed", ""},
      {"wrong method on tokenize", http::verb::put, "/tokenize", "{}", 405, "method_not_allowed", ""},
      {"bad tokenize", http::verb::post, "/tokenize", R"({"prompt": 3})", 400, "invalid_request_error", "prompt"},
      {"bad detokenize", http::verb::post, "/detokenize", R"({"tokens": [1, 100000]})", 400, "invalid_request_error", "tokens"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    auto r = http_call(s.port, c.method, c.target, c.body);
    CHECK(r.status == c.status);
    const auto err = r.body_json()["error"];
    CHECK(err["type"] == c.type);
    CHECK_FALSE(err["message"].get<std::string>().empty());
    if (!c.param.empty()) CHECK(err["param"] == c.param);
    if (c.status == 405) CHECK(!r.headers["Allow"].empty());
  }
  // A body that ends before its Content-Length: 400, then the connection closes.
  const auto truncated = raw_exchange(s.port, raw_post("/v1/completions", "{\"prompt\": \"a\"", 100), true);
  CHECK(status_of(truncated) == 400);
  CHECK(body_of(truncated)["error"]["code"] == "truncated_body");
  // Not HTTP at all.
  const auto garbage = raw_exchange(s.port, "\x01\x02 nonsense\r\n\r\n", true);
  CHECK(status_of(garbage) == 400);
  // A follow-up request succeeds and nothing leaked.
  auto ok = post_json(s.port, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 3}});
  CHECK(ok.status == 200);
  CHECK(engine_idle(s.port));
  CHECK(get(s.port, "/health").status == 200);
}

TEST_CASE("gateway http: keep-alive serves several requests on one connection", "[gateway][http]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  const std::string body = json{{"prompt", "Once"}, {"max_tokens", 3}, {"stream", true}}.dump();
  const std::string one = raw_post("/v1/completions", body, body.size());
  const std::string health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string last = "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  const auto raw = raw_exchange(s.port, one + health + one + last, false);
  std::size_t num_ok = 0;
  for (std::size_t pos = 0; (pos = raw.find("HTTP/1.1 200 OK", pos)) != std::string::npos; ++pos) ++num_ok;
  CHECK(num_ok == 4);
  CHECK(raw.find("data: [DONE]") != std::string::npos);
}

TEST_CASE("gateway http: an HTTP/1.0 stream is not chunked and ends when the connection closes", "[gateway][http]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  const std::string body = json{{"prompt", "Once"}, {"max_tokens", 3}, {"stream", true}}.dump();
  std::string request = raw_post("/v1/completions", body, body.size());
  request.replace(request.find("HTTP/1.1"), 8, "HTTP/1.0");
  const auto raw = raw_exchange(s.port, request, false);  // returns once the server closes
  REQUIRE(raw.starts_with("HTTP/1.0 200 OK\r\n"));
  const auto head_end = raw.find("\r\n\r\n");
  REQUIRE(head_end != std::string::npos);
  const std::string head = raw.substr(0, head_end);
  CHECK(head.find("Transfer-Encoding") == std::string::npos);
  CHECK(head.find("text/event-stream") != std::string::npos);
  auto parts = gateway::try_split_sse(raw.substr(head_end + 4));  // the body is the events, unframed
  REQUIRE(parts.has_value());
  CHECK(parts->back() == "[DONE]");
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway http: a request no waiting queue could hold is a 400 that says why, not a 429",
          "[gateway][http][errors]") {
  // A 429 tells the client to come back later; on an idle server these would be refused
  // forever (each choice waits as a request of its own). A full queue stays a 429
  // (tests/actors/gateway/overload_test.cpp).
  if (!has_stories()) return;
  auto d = stories_deployment();
  d.server.max_waiting_requests = 2;
  served s(d);
  for (const bool stream : {false, true}) {
    INFO("stream " << stream);
    auto r = post_json(s.port, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 3}, {"n", 3}, {"stream", stream}});
    CHECK(r.status == 400);
    CHECK(r.headers.count("Retry-After") == 0);
    const auto e = r.body_json()["error"];
    CHECK(e["code"] == "exceeds_queue_capacity");
    CHECK(e["param"] == "n");
    CHECK_THAT(e["message"].get<std::string>(), Catch::Contains("server.max_waiting_requests"));
  }
  auto chat = post_json(s.port, "/v1/chat/completions",
                        {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}, {"n", 3}});
  CHECK(chat.status == 400);
  CHECK(post_json(s.port, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 3}, {"n", 2}}).status == 200);
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway http: prompt tokens no waiting queue could hold are a 400 naming the field",
          "[gateway][http][errors]") {
  if (!has_stories()) return;
  auto d = stories_deployment();
  const std::string text = "Once upon a time there was a little girl";
  const auto num_tokens = std::int64_t(load_model(d.model).value().tok->encode(text, true).size());
  d.server.max_waiting_tokens = 2 * num_tokens;  // two such prompts fit, three do not
  served s(d);
  auto choices = post_json(s.port, "/v1/completions", {{"prompt", text}, {"max_tokens", 2}, {"n", 3}});
  CHECK(choices.status == 400);
  CHECK(choices.body_json()["error"]["code"] == "exceeds_queue_capacity");
  CHECK(choices.body_json()["error"]["param"] == "n");
  CHECK_THAT(choices.body_json()["error"]["message"].get<std::string>(), Catch::Contains("server.max_waiting_tokens"));
  auto inputs = post_json(s.port, "/v1/embeddings", {{"input", {text, text, text}}});
  CHECK(inputs.status == 400);
  CHECK(inputs.body_json()["error"]["code"] == "exceeds_queue_capacity");
  CHECK(inputs.body_json()["error"]["param"] == "input");
  CHECK(post_json(s.port, "/v1/completions", {{"prompt", text}, {"max_tokens", 2}}).status == 200);
  CHECK(post_json(s.port, "/v1/embeddings", {{"input", {text}}}).status == 200);
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway http: shutdown while streaming ends streams with abort, then DONE", "[gateway][http][shutdown]") {
  if (!has_stories()) return;
  auto d = stories_deployment();
  d.server.shutdown_grace_s = 0.05;
  d.debug.step_delay_s = 0.01;  // 480 tokens take 4.8 s at least: never within the grace
  served s(d);
  std::string streamed;
  std::atomic<bool> is_streaming{false};
  std::thread client([&] {
    net::io_context ioc;
    beast::tcp_stream stream(ioc);
    stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(s.port)));
    http::request<http::string_body> req{http::verb::post, "/v1/completions", 11};
    req.set(http::field::host, "x");
    req.body() = json{{"prompt", "Once upon a time"}, {"max_tokens", 480}, {"ignore_eos", true}, {"stream", true}}.dump();
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buf;
    http::response_parser<http::buffer_body> parser;
    http::read_header(stream, buf, parser);
    char chunk[4096];
    beast::error_code ec;
    while (!parser.is_done()) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof chunk;
      http::read(stream, buf, parser, ec);
      if (ec && ec != http::error::need_buffer) break;
      streamed.append(chunk, sizeof chunk - parser.get().body().size);
      is_streaming = true;
    }
  });
  while (!is_streaming) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  s.srv->request_shutdown();
  s.srv->wait();
  client.join();
  auto parts = gateway::try_split_sse(streamed);
  REQUIRE(parts.has_value());
  REQUIRE(parts->size() >= 2);
  CHECK(parts->back() == "[DONE]");
  const auto last = json::parse((*parts)[parts->size() - 2]);
  CHECK(last["choices"][0]["finish_reason"] == "abort");
  CHECK(all_blocks_return(*s.eng));
}

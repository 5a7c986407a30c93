// A reader slower than the engine: its SSE stream or WebSocket generations pause
// (tokens are held and merged into fewer chunks or messages) instead of the server's
// buffer growing, and nothing is lost.
#include "actors/gateway/sse.hpp"
#include "tests/actors/gateway/load_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

TEST_CASE("gateway http: a slow SSE reader's stream pauses and loses nothing", "[gateway][http][slow]") {
  if (!has_stories()) return;
  auto d = stories_deployment();
  d.server.max_stream_buffer_bytes = 1024;
  d.server.idle_timeout_s = 600;  // a reader that takes nothing for this long would be dropped
  served s(d);
  constexpr int num_choices = 8;
  const int max_tokens = s.eng->model().max_context - 8;
  // ~8 x 500 events of ~2.5 KB (20 top logprobs each): far more than the kernel's
  // socket buffers (4 MiB at most by default) hold for a reader that takes nothing.
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"temperature", 0},
                     {"ignore_eos", true}, {"n", num_choices}, {"logprobs", 20}, {"stream", true}};
  auto& num_generated = s.eng->metrics().generation_tokens_total;
  const auto generated = num_generated.load();  // before the request can make any
  net::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.socket().open(net::ip::tcp::v4());
  stream.socket().set_option(net::socket_base::receive_buffer_size(4096));
  stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(s.port)));
  http::request<http::string_body> req{http::verb::post, "/v1/completions", 11};
  req.set(http::field::host, "x");
  req.set(http::field::content_type, "application/json");
  req.body() = body.dump();
  req.prepare_payload();
  http::write(stream, req);
  // The engine finishes every choice while the client reads nothing.
  REQUIRE(wait_until([&] { return num_generated >= generated + num_choices * max_tokens; }, 120.0));
  REQUIRE(engine_idle(s.port));
  beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1ull << 30);
  http::read(stream, buf, parser);
  REQUIRE(parser.get().result_int() == 200);
  auto parts = gateway::try_split_sse(parser.get().body());
  REQUIRE(parts.has_value());
  REQUIRE(parts->back() == "[DONE]");
  std::vector<std::string> texts(num_choices);
  std::vector<int> num_logprobs(num_choices), num_finishes(num_choices);
  std::size_t num_events = 0;
  for (std::size_t i = 0; i + 1 < parts->size(); ++i) {
    const auto chunk = json::parse((*parts)[i]);
    for (const auto& c : chunk["choices"]) {
      const int index = c["index"].get<int>();
      REQUIRE(num_finishes[index] == 0);  // nothing after a choice's finish
      texts[index] += c["text"].get<std::string>();
      if (!c["logprobs"].is_null()) num_logprobs[index] += int(c["logprobs"]["tokens"].size());
      if (!c["finish_reason"].is_null()) ++num_finishes[index];
      ++num_events;
    }
  }
  // Held tokens were merged: fewer events than tokens ...
  CHECK(num_events < std::size_t(num_choices * max_tokens));
  // ... and nothing was lost: every choice has all its tokens and the greedy text.
  auto expected = post_json(s.port, "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", max_tokens},
                                                        {"temperature", 0}, {"ignore_eos", true}});
  REQUIRE(expected.status == 200);
  const auto want = expected.body_json()["choices"][0]["text"].get<std::string>();
  for (int i = 0; i < num_choices; ++i) {
    INFO("choice " << i);
    CHECK(num_finishes[i] == 1);
    CHECK(num_logprobs[i] == max_tokens);
    CHECK(texts[i] == want);
  }
}

TEST_CASE("gateway ws: a slow reader's generations pause at the byte limit and lose nothing", "[gateway][ws][slow]") {
  if (!has_stories()) return;
  auto d = stories_deployment();
  d.server.max_stream_buffer_bytes = 1024;
  d.server.ws_max_queued_messages = 1 << 20;  // never the limit hit: the bytes are
  d.server.idle_timeout_s = 600;            // no ping goes unanswered for this long
  served s(d);
  constexpr int num_requests = 4;
  const int max_tokens = s.eng->model().max_context - 8;
  auto& num_generated = s.eng->metrics().generation_tokens_total;
  const auto generated = num_generated.load();
  net::io_context ioc;
  beast::websocket::stream<beast::tcp_stream> ws(ioc);
  auto& socket = ws.next_layer().socket();
  socket.open(net::ip::tcp::v4());
  socket.set_option(net::socket_base::receive_buffer_size(4096));
  socket.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(s.port)));
  ws.handshake("127.0.0.1", "/v1/ws");
  ws.text(true);
  // ~4 x 500 messages of ~2.5 KB (20 top logprobs each): far more than the socket buffers hold.
  for (int id = 0; id < num_requests; ++id) {
    const json msg = {{"type", "generate"}, {"id", id}, {"prompt", "Once upon a time"}, {"max_tokens", max_tokens},
                      {"temperature", 0}, {"ignore_eos", true}, {"logprobs", 20}};
    ws.write(net::buffer(msg.dump()));
  }
  // The engine finishes every request while the client reads nothing.
  REQUIRE(wait_until([&] { return num_generated >= generated + num_requests * max_tokens; }, 120.0));
  REQUIRE(engine_idle(s.port));
  std::vector<std::string> texts(num_requests);
  std::vector<int> next_index(num_requests), num_logprobs(num_requests), num_messages(num_requests);
  int num_done = 0;
  while (num_done < num_requests) {
    beast::flat_buffer buf;
    ws.read(buf);
    const json msg = json::parse(beast::buffers_to_string(buf.data()));
    const int id = msg["id"].get<int>();
    if (msg["type"] == "done") {
      CHECK(msg["finish_reason"] == "length");
      ++num_done;
      continue;
    }
    REQUIRE(msg["type"] == "token");
    CHECK(msg["index"] == next_index[id]);
    next_index[id] += int(msg["token_ids"].size());
    num_logprobs[id] += int(msg["logprobs"].size());
    texts[id] += msg["text"].get<std::string>();
    ++num_messages[id];
  }
  auto expected = post_json(s.port, "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", max_tokens},
                                                        {"temperature", 0}, {"ignore_eos", true}});
  REQUIRE(expected.status == 200);
  const auto want = expected.body_json()["choices"][0]["text"].get<std::string>();
  for (int id = 0; id < num_requests; ++id) {
    INFO("request " << id);
    CHECK(num_messages[id] < max_tokens);  // held tokens went out merged
    CHECK(next_index[id] == max_tokens);
    CHECK(num_logprobs[id] == max_tokens);
    CHECK(texts[id] == want);
  }
}

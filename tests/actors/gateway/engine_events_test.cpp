// GET /v1/engine/events and the web UI against a real server (stories260K).
#include <functional>
#include <set>
#include <thread>

#include "actors/gateway/routes.hpp"
#include "tests/actors/gateway/gateway_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

/// A blocking reader of the SSE feed on a raw socket.
struct feed_reader {
  net::io_context ioc;
  beast::tcp_stream stream{ioc};
  std::string buf;
  std::string head;

  /// `receive_buffer` > 0 shrinks the socket's receive buffer (a reader that stalls).
  explicit feed_reader(int port, int receive_buffer = 0) {
    stream.socket().open(net::ip::tcp::v4());
    if (receive_buffer > 0) stream.socket().set_option(net::socket_base::receive_buffer_size(receive_buffer));
    stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
    const std::string req = "GET /v1/engine/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n";
    net::write(stream.socket(), net::buffer(req));
    while (buf.find("\r\n\r\n") == std::string::npos) REQUIRE(read_more(10.0));
    const auto end = buf.find("\r\n\r\n") + 4;
    head = buf.substr(0, end);
    buf.erase(0, end);
  }

  bool read_more(double seconds) {
    char tmp[8192];
    beast::error_code ec;
    stream.expires_after(std::chrono::milliseconds(int(seconds * 1000)));
    const std::size_t n = stream.read_some(net::buffer(tmp), ec);
    buf.append(tmp, n);
    return !ec || n > 0;
  }

  /// The next event: its name and data (comment lines skipped); nullopt after `seconds`.
  std::optional<std::pair<std::string, json>> next(double seconds = 30.0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      const auto end = buf.find("\n\n");
      if (end != std::string::npos) {
        const std::string block = buf.substr(0, end);
        buf.erase(0, end + 2);
        std::string name, data;
        std::size_t pos = 0;
        while (pos < block.size()) {
          const auto nl = std::min(block.find('\n', pos), block.size());
          const std::string line = block.substr(pos, nl - pos);
          if (line.starts_with("event: ")) name = line.substr(7);
          if (line.starts_with("data: ")) data = line.substr(6);
          pos = nl + 1;
        }
        if (!data.empty()) return std::make_pair(name, json::parse(data));
        continue;  // a comment (keep-alive)
      }
      const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0 || !read_more(left)) return std::nullopt;
    }
  }

  /// Step events until `done` returns true for one (or FAIL after `seconds`).
  std::vector<json> steps_until(const std::function<bool(const json&)>& done, double seconds = 60.0) {
    std::vector<json> out;
    for (;;) {
      auto ev = next(seconds);
      if (!ev) FAIL("the feed went quiet before the expected step");
      if (ev->first != "step") continue;
      out.push_back(ev->second);
      if (done(ev->second)) return out;
    }
  }
};

deployment events_deployment() {
  auto d = stories_deployment("splitfuse", 32);
  d.engine.threads = 1;
  return d;
}

bool has_finished(const json& step, std::size_t count, std::vector<json>& finished) {
  for (const auto& f : step["finished"]) finished.push_back(f);
  return finished.size() >= count;
}

}  // namespace

TEST_CASE("engine events: query parameters are found and percent-decoded", "[gateway][ui]") {
  using gateway::query_param;
  CHECK(query_param("/v1/engine/events?engine=10.0.0.1%3A9000", "engine") == "10.0.0.1:9000");
  CHECK(query_param("/x?a=1&engine=h:1&b=2", "engine") == "h:1");
  CHECK(query_param("/x?a=1&b=2", "engine") == std::nullopt);
  CHECK(query_param("/x", "engine") == std::nullopt);
  CHECK(query_param("/x?engine", "engine") == "");
  CHECK(query_param("/x?en%67ine=a+b", "engine") == "a b");
  CHECK(query_param("/x?engine=%zz", "engine") == std::nullopt);  // not well formed
  CHECK(query_param("/x?engine=%4", "engine") == std::nullopt);
  CHECK(query_param("/x?engines=1", "engine") == std::nullopt);
}

TEST_CASE("engine events: the page, its files and the feed are served, and none when the UI is off", "[gateway][ui]") {
  if (!has_stories()) return;
  {
    served s(events_deployment());
    auto page = get(s.port, "/");
    CHECK(page.status == 200);
    CHECK(page.content_type == "text/html; charset=utf-8");
    CHECK(page.body.find("<canvas id=\"timeline\"") != std::string::npos);
    CHECK(page.body.find("/ui/app.js") != std::string::npos);
    auto js = get(s.port, "/ui/engine_view.js");
    CHECK(js.status == 200);
    CHECK(js.content_type == "text/javascript; charset=utf-8");
    CHECK(js.body.find("fetch(`/v1/engine/events") != std::string::npos);  // read with fetch: it carries the key
    CHECK(get(s.port, "/ui/style.css").content_type == "text/css; charset=utf-8");
    CHECK(get(s.port, "/ui/no-such-file.js").status == 404);
    auto post = http_call(s.port, http::verb::post, "/v1/engine/events", "{}");
    CHECK(post.status == 405);
    CHECK(post.headers["Allow"] == "GET");
    // ?engine= names an engine behind a router: this server has its own.
    auto engine = get(s.port, "/v1/engine/events?engine=10.0.0.1%3A9000");
    CHECK(engine.status == 400);
    CHECK(engine.body_json()["error"]["param"] == "engine");
  }
  auto d = events_deployment();
  d.server.enable_ui = false;
  served s(d);
  for (const std::string path : {"/", "/ui/app.js", "/v1/engine/events"}) {
    INFO(path);
    auto off = get(s.port, path);
    CHECK(off.status == 404);
    CHECK(off.body_json()["error"]["code"] == "ui_disabled");
  }
}

TEST_CASE("engine events: one event per step, a prompt chunk fused with decodes, finishes with reasons",
          "[gateway][ui]") {
  if (!has_stories()) return;
  auto d = events_deployment();
  // A reader that falls behind gets merged events (several steps in one); this test
  // looks at single steps, so its queue never fills, however slow the machine.
  d.server.events_queue_size = 1 << 16;
  served s(d);
  feed_reader feed(s.port);
  CHECK(feed.head.starts_with("HTTP/1.1 200"));
  CHECK(feed.head.find("Content-Type: text/event-stream") != std::string::npos);
  auto hello = feed.next();
  REQUIRE(hello);
  CHECK(hello->first == "engine");
  CHECK(hello->second["policy"] == "splitfuse");
  CHECK(hello->second["budget"] == 32);
  CHECK(hello->second["model"] == s.eng->model().name);

  // A decodes; once it streams, B's long prompt arrives and rides along in chunks.
  ws_client ws(s.port);
  ws.send({{"type", "generate"}, {"id", "a"}, {"prompt", "Once upon a time"}, {"max_tokens", 400},
           {"ignore_eos", true}, {"temperature", 0}});
  REQUIRE(ws.receive()["type"] == "token");
  const std::string long_prompt =
      "Lily and Ben went to the park. They saw a big red ball and a small dog. The dog ran to the ball and "
      "pushed it with its nose. Lily laughed and clapped her hands.";
  ws.send({{"type", "generate"}, {"id", "b"}, {"prompt", long_prompt}, {"max_tokens", 4}, {"temperature", 0},
           {"ignore_eos", true}});
  auto steps = feed.steps_until([](const json& st) { return st["fused_steps"] == 1 && st["seqs"].size() == 2; });
  const auto& fused = steps.back();
  CHECK(fused["num_steps"] == 1);
  CHECK(fused["prefill_tokens"].get<int>() + fused["decode_tokens"].get<int>() <= 32);
  int num_chunks = 0, num_decodes = 0;
  for (const auto& q : fused["seqs"]) {
    if (q["prefill"].get<int>() > 0) ++num_chunks;
    if (q["decode"] == 1) ++num_decodes;
  }
  CHECK(num_chunks == 1);
  CHECK(num_decodes == 1);
  CHECK(fused["running"] == 2);
  CHECK(fused["kv_usage"].get<double>() > 0.0);

  ws.send({{"type", "cancel"}, {"id", "a"}});
  std::vector<json> finished;
  feed.steps_until([&](const json& st) { return has_finished(st, 2, finished); });
  std::multiset<std::string> reasons;
  for (const auto& f : finished) reasons.insert(f["reason"].get<std::string>());
  CHECK(reasons == std::multiset<std::string>{"cancelled", "length"});
}

TEST_CASE("engine events: server.events_max_subscribers readers at most", "[gateway][ui]") {
  if (!has_stories()) return;
  auto d = events_deployment();
  d.server.events_max_subscribers = 1;
  served s(d);
  std::optional<feed_reader> first(std::in_place, s.port);
  REQUIRE(first->next());
  auto refused = get(s.port, "/v1/engine/events");
  CHECK(refused.status == 503);
  CHECK(refused.body_json()["error"]["code"] == "too_many_subscribers");
  CHECK(refused.body_json()["error"]["message"].get<std::string>().find("server.events_max_subscribers") !=
        std::string::npos);
  first.reset();  // its place frees once the server sees the close
  bool is_admitted = false;
  for (int i = 0; i < 500 && !is_admitted; ++i) {
    feed_reader again(s.port);
    is_admitted = again.head.starts_with("HTTP/1.1 200");
    if (!is_admitted) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(is_admitted);
}

TEST_CASE("engine events: a reader that stops reading gets merged events, in order, none lost", "[gateway][ui]") {
  if (!has_stories()) return;
  auto d = events_deployment();
  d.server.events_queue_size = 4;
  served s(d);
  feed_reader feed(s.port, 4096);
  REQUIRE(feed.next());  // the engine event; then the reader reads nothing until the request is over
  constexpr int max_tokens = 400;
  auto reply = post_json(s.port, "/v1/completions",
                         {{"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"ignore_eos", true}});
  REQUIRE(reply.status == 200);
  const int num_prompt_tokens = reply.body_json()["usage"]["prompt_tokens"];
  std::vector<json> finished;
  auto steps = feed.steps_until([&](const json& st) { return has_finished(st, 1, finished); });
  int num_prefill = 0, num_decode = 0, most_merged = 1;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto& st = steps[i];
    if (i > 0) CHECK(st["step"].get<std::uint64_t>() == steps[i - 1]["last_step"].get<std::uint64_t>() + 1);
    CHECK(st["last_step"].get<std::uint64_t>() - st["step"].get<std::uint64_t>() + 1 == st["num_steps"]);
    most_merged = std::max(most_merged, st["num_steps"].get<int>());
    num_prefill += st["prefill_tokens"].get<int>();
    num_decode += st["decode_tokens"].get<int>();
  }
  CHECK(most_merged > 1);
  CHECK(steps.size() < std::size_t(max_tokens));
  CHECK(num_prefill == num_prompt_tokens);
  CHECK(num_decode == max_tokens - 1);
  CHECK(finished.at(0)["reason"] == "length");
}

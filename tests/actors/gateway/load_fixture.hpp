#pragma once
// Helpers for overload, queue-time and fault tests: a backend slowed by
// debug.step_delay_s holds one request running for as long as a test needs, so what
// waits behind it waits for certain, on any machine.

#include <functional>

#include "tests/actors/gateway/gateway_fixture.hpp"

namespace inflight::test {

// wait_until (engine_fixture.hpp): poll the engine (snapshot(), metrics()) rather than
// /metrics: a connection per poll would exhaust the machine's ephemeral ports over a long
// wait and break every other test running beside it.

/// stories260K with one sequence at a time and a slowed backend.
inline deployment one_at_a_time(double step_delay_s = 0.05) {
  auto d = stories_deployment("fcfs", 64, 256, 1);
  d.debug.step_delay_s = step_delay_s;
  return d;
}

/// A request that runs until cancelled (up to the end of the context), already started.
struct blocker {
  request_id id = 0;
  std::shared_ptr<collect_sink> sink = std::make_shared<collect_sink>();
  engine* eng = nullptr;

  explicit blocker(engine& e) : eng(&e) {
    auto req = greedy_request(e, "Once upon a time", 100000);
    req.params.ignore_eos = true;
    auto submitted = e.submit(req, sink);
    REQUIRE(submitted.has_value());
    id = *submitted;
    REQUIRE(wait_until([&] { return e.snapshot().gauges.num_requests_running == 1 && e.snapshot().num_waiting_to_start == 0; }));
  }
  ~blocker() {
    eng->cancel(id);
    sink->wait();
  }
};

/// A request written on a fresh connection and left unread; close() is the client going away.
struct raw_client {
  net::io_context ioc;
  beast::tcp_stream stream{ioc};

  raw_client(int port, const std::string& target, const json& body) {
    stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
    const std::string text = body.dump();
    const std::string req = "POST " + target + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            "Content-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text;
    net::write(stream.socket(), net::buffer(req));
  }
  void close() {
    beast::error_code ignored;
    stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    stream.socket().close(ignored);
  }
  /// Every byte until the server closes or `seconds` pass.
  std::string read_all(double seconds = 30.0) {
    std::string out;
    stream.expires_after(std::chrono::milliseconds(static_cast<int>(seconds * 1000)));
    char buf[4096];
    beast::error_code ec;
    for (;;) {
      const std::size_t n = stream.read_some(net::buffer(buf), ec);
      out.append(buf, n);
      if (ec) break;
    }
    return out;
  }
};

}  // namespace inflight::test

// The write side every streaming session shares (actors/gateway/session_writer.*),
// without a socket: a fake write function that completes when the test says so.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>

#include "actors/gateway/session_writer.hpp"

using namespace inflight::gateway;

namespace {

/// A writer whose writes complete only when complete() is called.
struct fake_session {
  boost::asio::io_context ioc;
  std::shared_ptr<int> owner = std::make_shared<int>(0);
  session_writer writer;
  std::vector<std::string> written;              ///< every write, in order
  std::vector<session_writer::done_fn> pending;  ///< writes not completed yet
  std::vector<std::string> log;                  ///< pause / resume / drained / gone, in order

  explicit fake_session(session_writer::limits lim) : writer(ioc.get_executor(), lim) {
    writer.start(owner, {
        .write = [this](const std::string& bytes, session_writer::done_fn done) {
          written.push_back(bytes);
          pending.push_back(std::move(done));
        },
        .on_pause = [this] { log.push_back("pause"); },
        .on_resume = [this] { log.push_back("resume"); },
        .on_drained = [this] { log.push_back("drained"); },
        .on_gone = [this] { log.push_back("gone"); },
    });
  }
  /// Completes the oldest write in flight.
  void complete(boost::system::error_code ec = {}) {
    REQUIRE_FALSE(pending.empty());
    auto done = std::move(pending.front());
    pending.erase(pending.begin());
    done(ec);
  }
};

session_writer::limits byte_stream(std::size_t max_bytes) { return {max_bytes, SIZE_MAX, 0.0, true}; }
session_writer::limits messages(std::size_t max_frames) { return {SIZE_MAX, max_frames, 0.0, false}; }

}  // namespace

TEST_CASE("session writer: one write at a time, in order, a byte stream coalescing what queued", "[gateway][writer]") {
  fake_session s(byte_stream(1024));
  s.writer.push("a");
  s.writer.push("b");
  s.writer.push("c");
  REQUIRE(s.written == std::vector<std::string>{"a"});  // b and c wait for a
  CHECK(s.writer.num_buffered_bytes() == 2);
  s.complete();
  REQUIRE(s.written == std::vector<std::string>{"a", "bc"});
  CHECK(s.writer.num_buffered_bytes() == 0);
  CHECK(s.log.empty());
  s.complete();
  CHECK(s.log == std::vector<std::string>{"drained"});
  CHECK(s.writer.is_idle());
}

TEST_CASE("session writer: messages go out one per write, in order", "[gateway][writer]") {
  fake_session s(messages(100));
  for (const char* m : {"1", "2", "3"}) s.writer.push(m);
  while (!s.pending.empty()) s.complete();
  CHECK(s.written == std::vector<std::string>{"1", "2", "3"});
  CHECK(s.log == std::vector<std::string>{"drained"});
}

TEST_CASE("session writer: over the byte limit the producers pause, a write that makes room resumes them",
          "[gateway][writer][backpressure]") {
  fake_session s(byte_stream(10));
  s.writer.push("0123");  // written at once: nothing buffered
  s.writer.push("456789");
  CHECK_FALSE(s.writer.is_paused());
  s.writer.push("ab");  // 6 + 2 = 8 < 10
  CHECK_FALSE(s.writer.is_paused());
  s.writer.push("cd");  // 10: at the limit
  CHECK(s.writer.is_paused());
  CHECK(s.log == std::vector<std::string>{"pause"});
  s.writer.push("ef");  // paused producers should not push, but a push is never lost
  CHECK(s.log == std::vector<std::string>{"pause"});  // one pause, not one per push
  s.complete();  // the next write takes the whole queue: room again
  CHECK_FALSE(s.writer.is_paused());
  CHECK(s.log == std::vector<std::string>{"pause", "resume"});
  REQUIRE(s.written.size() == 2);
  CHECK(s.written[1] == "456789abcdef");
  s.complete();
  CHECK(s.log.back() == "drained");
}

TEST_CASE("session writer: over the frame limit messages pause until the queue is under it",
          "[gateway][writer][backpressure]") {
  fake_session s(messages(2));
  s.writer.push("m1");  // in flight
  s.writer.push("m2");
  CHECK_FALSE(s.writer.is_paused());
  s.writer.push("m3");  // two queued
  CHECK(s.writer.is_paused());
  s.complete();  // m2 goes out: one queued, under the limit
  CHECK(s.log == std::vector<std::string>{"pause", "resume"});
  while (!s.pending.empty()) s.complete();
  CHECK(s.written == std::vector<std::string>{"m1", "m2", "m3"});
}

TEST_CASE("session writer: a failed write is the client gone and later pushes are dropped", "[gateway][writer]") {
  fake_session s(byte_stream(1024));
  s.writer.push("a");
  s.writer.push("b");
  s.complete(boost::asio::error::broken_pipe);
  CHECK(s.log == std::vector<std::string>{"gone"});
  CHECK(s.writer.is_closed());
  s.writer.push("c");
  CHECK(s.written == std::vector<std::string>{"a"});
  CHECK(s.writer.num_buffered_bytes() == 0);
}

TEST_CASE("session writer: a write that stalls past the timeout is the client gone", "[gateway][writer]") {
  fake_session s({SIZE_MAX, SIZE_MAX, 0.02, true});
  s.writer.push("a");  // never completes
  s.ioc.run();         // returns once the stall timer has fired: nothing else waits
  CHECK(s.log == std::vector<std::string>{"gone"});
  CHECK(s.writer.is_closed());
  s.complete();  // the write's late completion changes nothing
  CHECK(s.log == std::vector<std::string>{"gone"});
}

TEST_CASE("session writer: a write that completes in time stops its stall timer", "[gateway][writer]") {
  fake_session s({SIZE_MAX, SIZE_MAX, 3600.0, true});
  s.writer.push("a");
  s.complete();
  s.ioc.run();  // the cancelled timer's handler runs at once
  CHECK(s.log == std::vector<std::string>{"drained"});
  CHECK_FALSE(s.writer.is_closed());
}

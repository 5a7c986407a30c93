#pragma once
/// The write side every streaming connection shares (http_session's SSE responses,
/// ws_session's messages, events_session's feed), and the read that notices a client
/// going away:
/// - one write in flight at a time; frames pushed meanwhile queue in order (a byte
///   stream coalesces them into one write, WebSocket messages go out one per write);
/// - backpressure: the bytes and frames queued are counted against the connection's
///   limits (server.max_stream_buffer_bytes, server.ws_max_queued_messages); over
///   either, the session pauses its producers (their tokens are held, not queued), and a
///   write that takes the queue back under both resumes them: a slow reader costs memory
///   per live request, never per token, and never blocks the engine;
/// - a stall timer: a write that does not complete within the timeout
///   (server.idle_timeout_s) means the client stopped reading: it is treated as gone.
/// Everything runs on the connection's strand. The writer never touches a socket: the
/// session hands it a write function, so it is tested without one.

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

namespace inflight::gateway {

class session_writer {
 public:
  using error_code = boost::system::error_code;
  using done_fn = std::function<void(error_code)>;

  struct limits {
    std::size_t max_buffered_bytes = std::numeric_limits<std::size_t>::max();
    std::size_t max_queued_frames = std::numeric_limits<std::size_t>::max();
    double stall_timeout_s = 0.0;  ///< 0: no stall timer
    bool is_coalescing = true;     ///< queued frames go out as one write (a byte stream)
  };
  struct handlers {
    /// Writes `bytes` (alive until `done` runs) and calls `done` once.
    std::function<void(const std::string& bytes, done_fn done)> write;
    std::function<void()> on_pause{};    ///< the queue passed a limit
    std::function<void()> on_resume{};   ///< a write took it back under both
    std::function<void()> on_drained{};  ///< a write completed with nothing queued
    std::function<void()> on_gone{};     ///< a write failed or stalled (called once)
  };

  session_writer(boost::asio::any_io_executor ex, limits lim) : stall_timer_(std::move(ex)), limits_(lim) {}

  /// `owner` (the session) is kept alive by every handler the writer leaves pending.
  void start(std::weak_ptr<void> owner, handlers h);
  /// Queues a frame; a write starts when none is in flight. Ignored once closed.
  void push(std::string frame);
  /// Drops the queue and cancels the stall timer; later pushes are ignored.
  void close();

  bool is_idle() const { return !is_writing_ && queue_.empty(); }
  bool is_writing() const { return is_writing_; }
  bool is_paused() const { return is_paused_; }
  bool is_closed() const { return is_closed_; }
  std::size_t num_buffered_bytes() const { return num_buffered_bytes_; }
  std::size_t num_queued_frames() const { return queue_.size(); }

 private:
  bool is_over_limits() const;
  void do_write();
  void on_written(error_code ec);
  void arm_stall_timer();
  void gone();

  boost::asio::steady_timer stall_timer_;
  limits limits_;
  handlers handlers_;
  std::weak_ptr<void> owner_;
  std::deque<std::string> queue_;
  std::string writing_;
  std::size_t num_buffered_bytes_ = 0;
  bool is_writing_ = false;
  bool is_paused_ = false;
  bool is_closed_ = false;
};

/// A read on a connection whose client sends nothing while its answer streams: it ends
/// with bytes (HTTP: a pipelined request, kept by the session) or with an error (the
/// client went away, or the session cancelled the read).
class disconnect_watch {
 public:
  /// `on_end(ec, bytes)` runs once; the handler should hold the session.
  template <class Socket, class Handler>
  void start(Socket& socket, Handler on_end) {
    is_watching_ = true;
    socket.async_read_some(boost::asio::buffer(buf_),
                           [this, on_end = std::move(on_end)](error_code ec, std::size_t n) mutable {
                             is_watching_ = false;
                             on_end(ec, std::string(buf_.data(), n));
                           });
  }
  bool is_watching() const { return is_watching_; }

 private:
  using error_code = boost::system::error_code;
  std::array<char, 1024> buf_{};
  bool is_watching_ = false;
};

}  // namespace inflight::gateway

#include "actors/gateway/events_session.hpp"

#include <chrono>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "actors/gateway/engine_events.hpp"
#include "actors/gateway/sse.hpp"

namespace inflight::gateway {

namespace net = boost::asio;
namespace beast = boost::beast;

namespace {

// Little room in the kernel for a reader that does not read: it should fall behind in
// our bounded queue (and get aggregated events), not in megabytes of socket buffer.
constexpr int socket_send_buffer_bytes = 16 * 1024;

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::max(0.001, seconds) * 1e3));
}

}  // namespace

events_session::events_session(edge_stream&& stream, gateway_state& state,
                               std::shared_ptr<step_subscription> subscription)
    : stream_(std::move(stream)),
      state_(state),
      subscription_(std::move(subscription)),
      heartbeat_(stream_.get_executor()),
      // New steps wait in the subscription's queue, not here: pull() writes only when idle.
      writer_(stream_.get_executor(), {.stall_timeout_s = state.settings().idle_timeout_s}) {}

void events_session::run(unsigned http_version) {
  state_.add_session(shared_from_this());
  beast::error_code ignored;
  stream_.tcp().socket().set_option(net::socket_base::send_buffer_size(socket_send_buffer_bytes), ignored);
  std::weak_ptr<events_session> weak = shared_from_this();
  subscription_->set_wake([weak, ex = stream_.get_executor()] {
    net::post(ex, [weak] {
      if (auto self = weak.lock()) self->pull();
    });
  });
  // Raw `this`: the writer runs these from handlers that hold the session.
  writer_.start(weak_from_this(), {
      .write = [this](const std::string& bytes, session_writer::done_fn done) {
        net::async_write(stream_, net::buffer(bytes),
                         [done = std::move(done)](beast::error_code ec, std::size_t) { done(ec); });
      },
      .on_drained = [this] { pull(); },
      .on_gone = [this] { close(); },  // a write failed, or the reader stopped reading
  });
  // The body ends when the connection closes: no length, no chunking.
  writer_.push(sse_response_head(http_version, false, true) + engine_event_text(state_, subscription_->engine()));
  watch();
  arm_heartbeat();
}

void events_session::stop() {
  net::post(stream_.get_executor(), [self = shared_from_this()] { self->close(); });
}

void events_session::pull() {
  if (phase_ == phase::closed || !writer_.is_idle()) return;
  auto steps = subscription_->take();  // empty: the next step wakes us
  if (steps.empty()) return;
  std::string bytes;
  for (const auto& s : steps) bytes += step_event_text(s);
  writer_.push(std::move(bytes));
}

void events_session::arm_heartbeat() {
  heartbeat_.expires_after(millis(state_.settings().idle_timeout_s / 2));
  heartbeat_.async_wait([self = shared_from_this()](beast::error_code ec) { self->on_heartbeat(ec); });
}

void events_session::on_heartbeat(beast::error_code ec) {
  if (ec || phase_ == phase::closed) return;
  if (writer_.is_idle()) writer_.push(": keep-alive\n\n");
  arm_heartbeat();
}

void events_session::watch() {
  // The client sends nothing after its request: a read that ends means it went away.
  watch_.start(stream_, [self = shared_from_this()](beast::error_code ec, const std::string&) {
    if (ec) return self->close();
    self->watch();
  });
}

void events_session::close() {
  if (phase_ == phase::closed) return;
  phase_ = phase::closed;
  heartbeat_.cancel();
  writer_.close();
  beast::error_code ignored;
  stream_.tcp().socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  stream_.tcp().socket().close(ignored);
  subscription_.reset();  // unsubscribes; the last one stops the engine's summaries
}

}  // namespace inflight::gateway

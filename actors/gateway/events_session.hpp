#pragma once
/// One reader of GET /v1/engine/events: an SSE response that lasts until the client
/// goes away or the server shuts down. http_session hands over its socket once the
/// subscription is granted. Everything runs on the connection's strand; the engine only
/// posts a wake-up when a step arrives for an idle session. While a write is in flight,
/// new steps wait in the subscription's bounded queue (and merge there when it fills):
/// a slow reader gets fewer, aggregated events. A comment line every half
/// server.idle_timeout_s keeps an idle feed open; a write that stalls for a whole
/// idle timeout closes it.

#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>

#include "actors/gateway/edge_stream.hpp"
#include "actors/gateway/gateway_state.hpp"
#include "actors/gateway/session_writer.hpp"

namespace inflight::gateway {

class events_session final : public session_base, public std::enable_shared_from_this<events_session> {
 public:
  events_session(edge_stream&& stream, gateway_state& state,
                 std::shared_ptr<step_subscription> subscription);
  /// Writes the response header and the `engine` event, then streams steps.
  void run(unsigned http_version);
  void stop() override;
  void abort_requests() override {}

 private:
  enum class phase { streaming, closed };

  void pull();
  void arm_heartbeat();
  void on_heartbeat(boost::beast::error_code ec);
  void watch();
  void close();

  edge_stream stream_;
  gateway_state& state_;
  std::shared_ptr<step_subscription> subscription_;
  boost::asio::steady_timer heartbeat_;
  session_writer writer_;  ///< one write in flight, the stall timer
  disconnect_watch watch_;
  phase phase_ = phase::streaming;
};

}  // namespace inflight::gateway

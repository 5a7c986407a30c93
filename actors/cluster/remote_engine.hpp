#pragma once
/// An engine served to other processes, and the other processes' handle on it, over
/// CAF 0.17's middleman (actors/cluster/wire.hpp says what crosses):
///
///   gateway process                               engine process
///   remote_engine --(rsubmit, wire_request, tag)--> engine_host --submit--> engine
///        ^   client actor <--(token|finished, tag, event)-- request sinks
///
/// Both sides need an actor system whose config called announce_wire_types() and loaded
/// caf::io::middleman (the engine's own actors live in a system of their own).
///
/// Faults: a gateway that goes away (its process dies, the connection drops) has its
/// requests cancelled by the host, so their KV blocks come back; an engine that goes away
/// ends every request still streaming from it with finish_reason::error and
/// errc::unavailable. A process killed outright closes its connections at once; a host
/// cut off without a word is noticed through the middleman's heartbeats
/// (`middleman.heartbeat-interval`, `middleman.connection-timeout`; see
/// configure_wire_heartbeats()).

#include <caf/all.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/cluster/wire.hpp"
#include "actors/engine/engine.hpp"
#include "core/base/error.hpp"

namespace inflight {

/// Heartbeats every `interval_s` seconds, and a connection silent for `timeout_s` counts
/// as lost (both are off by default in CAF 0.17).
void configure_wire_heartbeats(caf::actor_system_config& cfg, double interval_s, double timeout_s);

/// The actor system of a process's network side: the wire types announced, heartbeats
/// every `heartbeat_interval_s`, a connection silent for `connection_timeout_s` lost, and
/// the middleman loaded.
struct wire_system_config : caf::actor_system_config {
  explicit wire_system_config(double heartbeat_interval_s = 1.0, double connection_timeout_s = 5.0);
};

/// Publishes `eng` on `host`:`port` (0 = any free port) of `net`'s middleman. Routers
/// that subscribe get the engine's cache and load reports (actors/cache_feed.hpp): a
/// full one at each subscription (to every subscriber), then the deltas.
class engine_host {
 public:
  /// One engine of a process that serves several models, with the names that choose it.
  struct named_engine {
    engine* eng = nullptr;
    std::vector<std::string> names;  ///< its served name, then its aliases
  };

  static result<std::unique_ptr<engine_host>> start(caf::actor_system& net, engine& eng, const std::string& host,
                                                    std::uint16_t port);
  /// Several models behind one port: a host actor each, the first one published; a
  /// router finds a model's host by name (model_host_atom, wire.hpp).
  static result<std::unique_ptr<engine_host>> start(caf::actor_system& net, std::vector<named_engine> engines,
                                                    const std::string& host, std::uint16_t port);
  /// Unpublishes, and cancels the requests that gateways still have running here.
  ~engine_host();
  engine_host(const engine_host&) = delete;
  engine_host& operator=(const engine_host&) = delete;

  std::uint16_t port() const { return port_; }
  /// Tells the subscribed routers that the engines drain (call as they stop taking
  /// requests): they stop choosing them at once, before any request meets its refusal.
  void drain();

 private:
  engine_host(caf::actor_system& net, std::vector<engine*> engines, std::vector<caf::actor> actors, std::uint16_t port)
      : net_(net), engines_(std::move(engines)), actors_(std::move(actors)), port_(port) {}
  caf::actor_system& net_;
  std::vector<engine*> engines_;
  std::vector<caf::actor> actors_;  ///< one per engine; the first is published
  std::uint16_t port_;
};

/// An engine in another process, through its engine_host.
class remote_engine {
 public:
  /// Receives the engine's cache and load reports, in order, on an actor thread of the
  /// network side: must be thread-safe and must not block.
  using report_handler = std::function<void(const engine_report&)>;
  /// Receives the engine's step summaries (actors/step_feed.hpp), in order, on an actor
  /// thread of the network side: must be thread-safe and must not block.
  using step_handler = std::function<void(const step_summary&)>;
  /// Called once when the engine says it drains (it takes no new requests and finishes
  /// those it has), on an actor thread of the network side: thread-safe, must not block.
  using drain_handler = std::function<void()>;
  /// Where the client actor finds the step handler (set from any thread).
  class step_handler_slot {
   public:
    void set(step_handler handler);
    void call(const step_summary& step);

   private:
    std::mutex mutex_;
    step_handler handler_;
  };

  /// Connects to the engine_host at `host`:`port`; requests to it give up after
  /// `timeout_s`. With `on_report` or `on_drain`, subscribes to the engine's reports (a
  /// full one first, then the deltas) and its word that it drains. With `model`, to the
  /// engine of that model there (errc::not_found when the process serves no such model).
  static result<std::unique_ptr<remote_engine>> connect(caf::actor_system& net, const std::string& host,
                                                        std::uint16_t port, double timeout_s = 10.0,
                                                        report_handler on_report = {}, drain_handler on_drain = {},
                                                        const std::string& model = {});
  /// Requests still running end with an error event (their engine is not told).
  ~remote_engine();
  remote_engine(const remote_engine&) = delete;
  remote_engine& operator=(const remote_engine&) = delete;

  /// Queues `request` on the engine; its events go to `sink` (on an actor thread of
  /// `net`). A grammar crosses as the spec it was compiled from (the token_index's
  /// source(); the engine compiles it again). The engine's refusals come back as they
  /// are (invalid_argument, queue_full, ...); no answer within the timeout, or no
  /// engine, is errc::unavailable. The id is this remote_engine's own.
  result<request_id> submit(generate_request request, std::shared_ptr<request_sink> sink);
  /// Stops a request within a step of the engine; its sink gets on_finish(cancelled).
  void cancel(request_id id);
  /// The engine's health; errc::unavailable when it does not answer.
  result<engine_health> health();
  /// The engine's own /metrics text (Prometheus); errc::unavailable when it does not
  /// answer within `timeout_s`.
  result<std::string> metrics_text(double timeout_s);
  /// Subscribes to the engine's step summaries (the engine summarises its steps only
  /// while some router does), or, with an empty handler, stops.
  void set_step_handler(step_handler handler);
  /// False once the engine went away (a new connect() is needed).
  bool is_connected() const { return !is_down_->load(); }
  /// True once the engine said it drains (subscribed connections only): it refuses new
  /// requests with shutting_down until it exits; a new connection to its restart does not drain.
  bool is_draining() const { return is_draining_->load(); }
  const std::string& address() const { return address_; }

 private:
  remote_engine(caf::actor_system& net, caf::actor client, std::shared_ptr<std::atomic<bool>> is_down,
                std::shared_ptr<std::atomic<bool>> is_draining, std::shared_ptr<step_handler_slot> on_step,
                std::string address, double timeout_s)
      : net_(net), client_(std::move(client)), is_down_(std::move(is_down)), is_draining_(std::move(is_draining)),
        on_step_(std::move(on_step)), address_(std::move(address)), timeout_s_(timeout_s) {}
  caf::actor_system& net_;
  caf::actor client_;
  std::shared_ptr<std::atomic<bool>> is_down_;
  std::shared_ptr<std::atomic<bool>> is_draining_;
  std::shared_ptr<step_handler_slot> on_step_;
  std::string address_;
  double timeout_s_;
};

}  // namespace inflight

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<inflight::request_sink>)

#pragma once
/// What a gateway needs of an engine. The in-process engine (actors/engine/engine.hpp) provides
/// it, and so does a router in front of engines in other processes: the gateway's HTTP,
/// SSE, WebSocket and metrics code is the same for both.

#include <memory>
#include <string>
#include <vector>

#include "core/config/deployment.hpp"
#include "core/base/error.hpp"
#include "core/engine/metrics/metrics.hpp"
#include "core/model/model_loader.hpp"

namespace inflight {

using request_id = seq_id;
struct generate_request;
struct submission;  // actors/engine/engine.hpp: a request and the sink of its events
struct engine_snapshot;
struct engine_health;
class request_sink;
class step_sink;  // actors/step_feed.hpp

class engine_api {
 public:
  virtual ~engine_api() = default;

  /// Queues a request; its events go to `sink`. Refused (invalid_argument) for an
  /// empty or too long prompt or bad parameters, (queue_full) when the waiting queue is
  /// full, (shutting_down) while shutting down, (unavailable) when no engine can take it.
  virtual result<request_id> submit(generate_request request, std::shared_ptr<request_sink> sink) = 0;
  /// Queues several requests that start together, all or none: a refusal of any (as
  /// submit() refuses) refuses them all and leaves none queued. The in-process engine
  /// plans none of them into a step before all are queued (a burst that arrives at
  /// once, the choices of one HTTP request); this default submits them one by one and
  /// cancels those already queued when one is refused (their sinks may still hear of it).
  virtual result<std::vector<request_id>> submit_all(std::vector<submission> requests);
  /// Stops a request within one step; its sink gets on_finish(cancelled).
  virtual void cancel(request_id id) = 0;
  virtual engine_snapshot snapshot() const = 0;
  /// Stops admitting, lets running requests finish for up to `grace_s`, cancels the
  /// rest. Idempotent.
  virtual void shutdown(double grace_s) = 0;
  virtual engine_health health() const = 0;
  /// The model as the gateway sees it (tokenizer, chat template, limits; a router's has no weights).
  virtual const loaded_model& model() const = 0;
  virtual const deployment& settings() const = 0;
  virtual engine_metrics& metrics() = 0;
  virtual std::string render_metrics() const = 0;
  /// The one receiver of step summaries (nullptr stops them). A router's come from every
  /// engine behind it, each summary naming its engine (step_summary::engine).
  virtual void set_step_sink(std::shared_ptr<step_sink> sink) = 0;
  virtual bool has_step_sink() const = 0;
  /// The engines behind a router ("host:port", in its configured order); empty for an
  /// engine in this process.
  virtual std::vector<std::string> engine_addresses() const { return {}; }
};

}  // namespace inflight

#pragma once
/// One actor per request: turns token ids into text deltas (stop strings, incremental
/// UTF-8), enforces the deadline, records the timeline and feeds the sink.

#include <memory>
#include <optional>

#include "actors/messages.hpp"
#include "core/request/text_stream.hpp"

namespace inflight {


struct request_state {
  request_context ctx;
  std::optional<text_stream> stream;
  scheduler_actor scheduler;
  int num_tokens = 0;
  std::optional<double> first_scheduled_s, first_token_s, last_token_s;
  bool is_stopping = false;
  static inline const char* name = "request";
};

request_actor::behavior_type request_fn(request_actor::stateful_pointer<request_state> self, request_context ctx,
                                        scheduler_actor scheduler);

/// Timings from a request's timeline (seconds on the engine clock).
request_timings make_timings(double arrival, std::optional<double> first_scheduled, std::optional<double> first_token,
                             double finished, int num_tokens);

}  // namespace inflight

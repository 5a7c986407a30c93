#pragma once
/// One actor per request: turns token ids into text deltas (stop strings, incremental
/// UTF-8), observes the latency metrics from the timestamps core's scheduler puts on
/// each token and finish, and feeds the sink. (The deadline is the step loop's.)

#include <memory>
#include <optional>

#include "actors/engine/messages.hpp"
#include "core/engine/request/text_stream.hpp"

namespace inflight {


struct request_state {
  request_context ctx;
  std::optional<text_stream> stream;
  scheduler_actor scheduler;
  int num_tokens = 0;
  std::optional<double> last_token_s;  ///< core's time of the last token seen
  bool is_stopping = false;
  std::string stop_string;              ///< the stop string that ended the text
  std::optional<token_id> stop_token;   ///< the stop_token_ids entry that ended the sequence
  static inline const char* name = "request";
};

request_actor::behavior_type request_fn(request_actor::stateful_pointer<request_state> self, request_context ctx,
                                        scheduler_actor scheduler);

/// Timings from a request's timeline (seconds on the scheduler's clock).
request_timings make_timings(double arrival, std::optional<double> first_scheduled, std::optional<double> first_token,
                             double finished, int num_tokens);

}  // namespace inflight

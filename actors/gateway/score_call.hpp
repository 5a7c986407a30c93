#pragma once
/// One /v1/rerank, /v1/score or WebSocket "rerank" call: submits each query-document
/// pair as its own prefill-only engine request (so they batch together, and share the
/// query prefix), turns each pair's yes/no logits into a score and, when every pair
/// has one, hands over the whole response. Runs on the connection's strand (events
/// arrive through posting_sink); knows no sockets.

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"
#include "actors/gateway/gateway_call.hpp"
#include "actors/gateway/gateway_state.hpp"
#include "actors/gateway/posting_sink.hpp"
#include "actors/gateway/prefill_fanout.hpp"
#include "actors/gateway/score_request.hpp"

namespace inflight::gateway {

class score_call final : public gateway_call, public std::enable_shared_from_this<score_call> {
 public:
  /// The response body, or the error that ended the call; called once.
  using emit_fn = prefill_fanout::emit_fn;

  score_call(gateway_state& state, score_request request, post_fn post, emit_fn emit);

  /// Submits every pair. On error nothing was emitted and nothing stays queued: the
  /// caller answers with the error.
  std::optional<api_error> try_start();
  void cancel() override { fanout_.cancel(); }

 private:
  void on_finish(int index, const finish_event& ev);

  gateway_state& state_;
  score_request request_;
  prefill_fanout fanout_;
  std::vector<double> scores_;
  int num_cached_tokens_ = 0;  ///< prompt tokens of the pairs taken from the prefix cache
};

}  // namespace inflight::gateway

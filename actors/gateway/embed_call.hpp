#pragma once
/// One /v1/embeddings call or WebSocket "embed" message: submits each input as its own
/// prefill-only engine request (so they batch together under the step's token budget),
/// cuts and normalises each pooled hidden state and, when every input has one, hands
/// over the whole response. Runs on the connection's strand (events arrive through
/// posting_sink); knows no sockets.

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/gateway/embed_request.hpp"
#include "actors/gateway/errors.hpp"
#include "actors/gateway/gateway_call.hpp"
#include "actors/gateway/gateway_state.hpp"
#include "actors/gateway/posting_sink.hpp"
#include "actors/gateway/prefill_fanout.hpp"

namespace inflight::gateway {

class embed_call final : public gateway_call, public std::enable_shared_from_this<embed_call> {
 public:
  /// The response body, or the error that ended the call; called once.
  using emit_fn = prefill_fanout::emit_fn;

  embed_call(gateway_state& state, embed_request request, post_fn post, emit_fn emit);

  /// Submits every input. On error nothing was emitted and nothing stays queued: the
  /// caller answers with the error.
  std::optional<api_error> try_start();
  void cancel() override { fanout_.cancel(); }

 private:
  void on_finish(int index, const finish_event& ev);

  gateway_state& state_;
  embed_request request_;
  prefill_fanout fanout_;
  std::vector<std::vector<float>> embeddings_;
};

}  // namespace inflight::gateway

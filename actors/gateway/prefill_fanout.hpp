#pragma once
/// The fan-out of a call that answers with one JSON body built from many prefill-only
/// engine requests (embed_call: one per input; score_call: one per pair): submits them
/// all or none, counts each request's finish once, ends the call at the first failure
/// (cancelling the rest), and emits the body or the error exactly once. Runs on the
/// connection's strand, like the calls that own it.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"
#include "actors/gateway/gateway_state.hpp"
#include "actors/gateway/posting_sink.hpp"

namespace inflight::gateway {

class prefill_fanout {
 public:
  /// The response body, or the error that ended the call; called once.
  using emit_fn = std::function<void(api_result<nlohmann::json>)>;
  /// The engine request of item `index`.
  using make_fn = std::function<generate_request(int index)>;
  /// Where item `index`'s finish event goes (the owning call, which it keeps alive).
  using finish_fn = std::function<void(int index, const finish_event& ev)>;

  prefill_fanout(gateway_state& state, post_fn post, emit_fn emit);

  /// Submits items [0, num_items). On error nothing was emitted and nothing stays
  /// queued (the items already queued are cancelled, their events ignored); the error
  /// names `invalid_param` when the engine refused an item as invalid_argument.
  std::optional<api_error> try_submit(int num_items, const make_fn& make, const finish_fn& on_finish,
                                      const std::string& invalid_param = {});
  /// Cancels the items still running (the client went away, or the call failed) and ends
  /// the call: nothing is emitted after it, whatever finishes are still on their way.
  void cancel();
  /// Counts item `index`'s finish. True when the caller should use the event: the
  /// item finished normally and the call has not ended; an engine error, a
  /// cancellation or a deadline fails the call here, and then false.
  bool try_accept(int index, const finish_event& ev);
  /// Ends the call with `e` (once), cancelling the items still running.
  void fail(api_error e);
  /// Ends the call with its body (once).
  void emit(nlohmann::json body);
  /// Every item has finished.
  bool is_done() const { return num_finished_ == int(ids_.size()); }

 private:
  gateway_state& state_;
  post_fn post_;
  emit_fn emit_;
  std::vector<request_id> ids_;
  std::vector<bool> is_finished_;
  int num_finished_ = 0;
  bool is_cancelled_ = false;
};

}  // namespace inflight::gateway

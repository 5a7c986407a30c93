#include "actors/gateway/prefill_fanout.hpp"

#include <memory>
#include <utility>

namespace inflight::gateway {

prefill_fanout::prefill_fanout(gateway_state& state, post_fn post, emit_fn emit)
    : state_(state), post_(std::move(post)), emit_(std::move(emit)) {}

std::optional<api_error> prefill_fanout::try_submit(int num_items, const make_fn& make, const finish_fn& on_finish,
                                                    const std::string& invalid_param) {
  ids_.assign(std::size_t(num_items), 0);
  is_finished_.assign(std::size_t(num_items), false);
  std::vector<submission> all;
  for (int i = 0; i < num_items; ++i) {
    auto sink = std::make_shared<posting_sink>(
        post_, [](const token_event&) {}, [on_finish, i](const finish_event& ev) { on_finish(i, ev); });
    all.push_back({make(i), std::move(sink)});
  }
  // The items start together, all or none; a refusal's late events are ignored.
  auto ids = state_.eng().submit_all(std::move(all));
  if (!ids) {
    is_cancelled_ = true;
    emit_ = nullptr;
    return to_api_error(ids.error(), ids.error().code == errc::invalid_argument ? invalid_param : std::string());
  }
  for (int i = 0; i < num_items; ++i) {
    ids_[std::size_t(i)] = (*ids)[std::size_t(i)];
    state_.add_live_request();
  }
  return std::nullopt;
}

void prefill_fanout::cancel() {
  emit_ = nullptr;  // the call is over: the finishes still on their way emit nothing
  if (is_cancelled_) return;
  is_cancelled_ = true;
  for (std::size_t i = 0; i < ids_.size(); ++i)
    if (!is_finished_[i]) state_.eng().cancel(ids_[i]);
}

void prefill_fanout::fail(api_error e) {
  auto emit = std::exchange(emit_, nullptr);
  cancel();
  if (emit) emit(std::unexpected(std::move(e)));
}

void prefill_fanout::emit(nlohmann::json body) {
  if (!emit_) return;
  auto emit = std::exchange(emit_, nullptr);
  emit(std::move(body));
}

bool prefill_fanout::try_accept(int index, const finish_event& ev) {
  if (is_finished_[std::size_t(index)]) return false;
  is_finished_[std::size_t(index)] = true;
  ++num_finished_;
  state_.remove_live_request();
  if (!emit_) return false;
  if (ev.reason == finish_reason::error) {
    fail(finish_error(ev));
    return false;
  }
  // Cut by shutdown (503 shutting_down) or its deadline (504 timeout): no partial answer.
  if (ev.reason == finish_reason::cancelled || ev.reason == finish_reason::aborted) {
    fail(ev.cause ? to_api_error(*ev.cause) : to_api_error({errc::cancelled, "the request was cancelled"}));
    return false;
  }
  return true;
}

}  // namespace inflight::gateway

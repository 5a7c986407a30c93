#include "actors/gateway/embed_call.hpp"

#include <utility>

namespace inflight::gateway {

embed_call::embed_call(gateway_state& state, embed_request request, post_fn post, emit_fn emit)
    : state_(state), request_(std::move(request)), post_(std::move(post)), emit_(std::move(emit)) {}

std::optional<api_error> embed_call::try_start() {
  const auto& model = state_.model();
  if (!model.embeddings) return embeddings_unavailable(model);
  const int n = request_.num_inputs();
  ids_.assign(std::size_t(n), 0);
  embeddings_.assign(std::size_t(n), {});
  is_finished_.assign(std::size_t(n), false);
  auto self = shared_from_this();
  for (int i = 0; i < n; ++i) {
    generate_request req;
    req.prompt = request_.inputs[std::size_t(i)];
    req.priority = request_.priority;
    req.cache_salt = request_.cache_salt;
    req.timeout_s = model.request_timeout_s;
    req.pooling = model.embeddings->pooling;
    auto sink = std::make_shared<posting_sink>(
        post_, [](const token_event&) {}, [self, i](const finish_event& ev) { self->on_finish(i, ev); });
    auto id = state_.eng().submit(std::move(req), std::move(sink));
    if (!id) {
      // All or nothing: the inputs already queued are cancelled and their events ignored.
      is_cancelled_ = true;
      emit_ = nullptr;
      for (int j = 0; j < i; ++j) state_.eng().cancel(ids_[std::size_t(j)]);
      return to_api_error(id.error(), id.error().code == errc::invalid_argument ? "input" : "");
    }
    ids_[std::size_t(i)] = *id;
    state_.add_live_request();
  }
  return std::nullopt;
}

void embed_call::cancel() {
  if (is_cancelled_) return;
  is_cancelled_ = true;
  for (std::size_t i = 0; i < ids_.size(); ++i)
    if (!is_finished_[i]) state_.eng().cancel(ids_[i]);
}

void embed_call::fail(api_error e) {
  cancel();
  if (!emit_) return;
  auto emit = std::exchange(emit_, nullptr);
  emit(std::unexpected(std::move(e)));
}

void embed_call::on_finish(int index, const finish_event& ev) {
  if (is_finished_[std::size_t(index)]) return;
  is_finished_[std::size_t(index)] = true;
  ++num_finished_;
  state_.remove_live_request();
  if (!emit_) return;
  if (ev.reason == finish_reason::error) return fail(finish_error(ev));
  // Cut by shutdown (503 shutting_down) or its deadline (504 timeout): no partial answer.
  if (ev.reason == finish_reason::cancelled || ev.reason == finish_reason::aborted) {
    return fail(ev.cause ? to_api_error(*ev.cause) : to_api_error({errc::cancelled, "the request was cancelled"}));
  }
  if (ev.embedding.empty())
    return fail(to_api_error({errc::internal, "the engine returned no hidden state for an embedding request"}));
  const auto& model = state_.model();
  embeddings_[std::size_t(index)] = finish_embedding(ev.embedding, request_.dimensions, model.embeddings->normalize);
  if (!is_done()) return;
  auto emit = std::exchange(emit_, nullptr);
  emit(embeddings_response(model.name, request_, embeddings_));
}

}  // namespace inflight::gateway

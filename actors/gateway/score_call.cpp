#include "actors/gateway/score_call.hpp"

#include <utility>

#include "actors/gateway/openai_response.hpp"
#include "actors/gateway/score_response.hpp"

namespace inflight::gateway {

score_call::score_call(gateway_state& state, score_request request, post_fn post, emit_fn emit)
    : state_(state), request_(std::move(request)), post_(std::move(post)), emit_(std::move(emit)) {}

std::optional<api_error> score_call::try_start() {
  const auto& model = state_.model();
  const int n = request_.num_pairs();
  ids_.assign(std::size_t(n), 0);
  scores_.assign(std::size_t(n), 0.0);
  is_finished_.assign(std::size_t(n), false);
  auto self = shared_from_this();
  for (int i = 0; i < n; ++i) {
    generate_request req;
    req.prompt = request_.prompts[std::size_t(i)];
    req.priority = request_.priority;
    req.cache_salt = request_.cache_salt;
    req.timeout_s = model.request_timeout_s;
    const auto rows = model.rerank->score_rows();
    req.score_rows.assign(rows.begin(), rows.end());
    auto sink = std::make_shared<posting_sink>(
        post_, [](const token_event&) {}, [self, i](const finish_event& ev) { self->on_finish(i, ev); });
    auto id = state_.eng().submit(std::move(req), std::move(sink));
    if (!id) {
      // All or nothing: the pairs already queued are cancelled and their events ignored.
      is_cancelled_ = true;
      emit_ = nullptr;
      for (int j = 0; j < i; ++j) state_.eng().cancel(ids_[std::size_t(j)]);
      return to_api_error(id.error());
    }
    ids_[std::size_t(i)] = *id;
    state_.add_live_request();
  }
  return std::nullopt;
}

void score_call::cancel() {
  if (is_cancelled_) return;
  is_cancelled_ = true;
  for (std::size_t i = 0; i < ids_.size(); ++i)
    if (!is_finished_[i]) state_.eng().cancel(ids_[i]);
}

void score_call::fail(api_error e) {
  cancel();
  if (!emit_) return;
  auto emit = std::exchange(emit_, nullptr);
  emit(std::unexpected(std::move(e)));
}

void score_call::on_finish(int index, const finish_event& ev) {
  if (is_finished_[std::size_t(index)]) return;
  is_finished_[std::size_t(index)] = true;
  ++num_finished_;
  state_.remove_live_request();
  if (!emit_) return;
  if (ev.reason == finish_reason::error) return fail(finish_error(ev));
  // Cut by shutdown (503 shutting_down) or its deadline (504 timeout): no partial score.
  if (ev.reason == finish_reason::cancelled || ev.reason == finish_reason::aborted) {
    return fail(ev.cause ? to_api_error(*ev.cause) : to_api_error({errc::cancelled, "the request was cancelled"}));
  }
  if (ev.row_logits.size() != 2)
    return fail(to_api_error({errc::internal, "the engine returned no yes/no logits for a scoring request"}));
  scores_[std::size_t(index)] = reranker::score(ev.row_logits[0], ev.row_logits[1]);
  num_cached_tokens_ += ev.cached_tokens;
  if (!is_done()) return;
  const auto& model = state_.model();
  const bool is_rerank = request_.api == score_api::rerank;
  const response_meta meta{make_response_id(is_rerank ? "rerank-" : "score-"), unix_now(), model.name};
  auto emit = std::exchange(emit_, nullptr);
  emit(is_rerank ? rerank_response(meta, request_, scores_, num_cached_tokens_)
                 : score_response(meta, request_, scores_, num_cached_tokens_));
}

}  // namespace inflight::gateway

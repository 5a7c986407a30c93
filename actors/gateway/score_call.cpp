#include "actors/gateway/score_call.hpp"

#include <utility>

#include "actors/gateway/openai_response.hpp"
#include "actors/gateway/queue_limits.hpp"
#include "actors/gateway/score_response.hpp"

namespace inflight::gateway {

score_call::score_call(gateway_state& state, score_request request, post_fn post, emit_fn emit)
    : state_(state), request_(std::move(request)), fanout_(state, std::move(post), std::move(emit)) {}

std::optional<api_error> score_call::try_start() {
  const auto& model = state_.model();
  const char* param = request_.api == score_api::rerank ? "documents" : "text_2";
  const auto& server = state_.eng().settings().server;
  if (auto e = check_queue_capacity(server, request_.num_pairs(), request_.num_prompt_tokens(), param)) return e;
  scores_.assign(std::size_t(request_.num_pairs()), 0.0);
  const auto make = [this, &model](int i) {
    generate_request req;
    req.prompt = request_.prompts[std::size_t(i)];
    req.priority = request_.priority;
    req.cache_salt = request_.cache_salt;
    req.adapter = request_.adapter;
    req.timeout_s = model.request_timeout_s;
    const auto rows = model.rerank->score_rows();
    req.score_rows.assign(rows.begin(), rows.end());
    return req;
  };
  auto self = shared_from_this();
  return fanout_.try_submit(request_.num_pairs(), make,
                            [self](int i, const finish_event& ev) { self->on_finish(i, ev); });
}

void score_call::on_finish(int index, const finish_event& ev) {
  if (!fanout_.try_accept(index, ev)) return;
  if (ev.row_logits.size() != 2)
    return fanout_.fail(to_api_error({errc::internal, "the engine returned no yes/no logits for a scoring request"}));
  scores_[std::size_t(index)] = reranker::score(ev.row_logits[0], ev.row_logits[1]);
  num_cached_tokens_ += ev.cached_tokens;
  if (!fanout_.is_done()) return;
  const auto& model = state_.model();
  const bool is_rerank = request_.api == score_api::rerank;
  const response_meta meta{make_response_id(is_rerank ? "rerank-" : "score-"), unix_now(),
                           request_.adapter.empty() ? model.name : request_.adapter};
  fanout_.emit(is_rerank ? rerank_response(meta, request_, scores_, num_cached_tokens_)
                         : score_response(meta, request_, scores_, num_cached_tokens_));
}

}  // namespace inflight::gateway

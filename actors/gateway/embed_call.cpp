#include "actors/gateway/embed_call.hpp"

#include <utility>

#include "actors/gateway/queue_limits.hpp"

namespace inflight::gateway {

embed_call::embed_call(gateway_state& state, embed_request request, post_fn post, emit_fn emit)
    : state_(state), request_(std::move(request)), fanout_(state, std::move(post), std::move(emit)) {}

std::optional<api_error> embed_call::try_start() {
  const auto& model = state_.model();
  if (!model.embeddings) return embeddings_unavailable(model);
  const auto& server = state_.eng().settings().server;
  if (auto e = check_queue_capacity(server, request_.num_inputs(), request_.num_prompt_tokens(), "input")) return e;
  embeddings_.assign(std::size_t(request_.num_inputs()), {});
  const auto make = [this, &model](int i) {
    generate_request req;
    req.prompt = request_.inputs[std::size_t(i)];
    req.priority = request_.priority;
    req.cache_salt = request_.cache_salt;
    req.adapter = request_.adapter;
    req.timeout_s = model.request_timeout_s;
    req.pooling = model.embedding.pooling;
    return req;
  };
  auto self = shared_from_this();
  return fanout_.try_submit(request_.num_inputs(), make,
                            [self](int i, const finish_event& ev) { self->on_finish(i, ev); }, "input");
}

void embed_call::on_finish(int index, const finish_event& ev) {
  if (!fanout_.try_accept(index, ev)) return;
  if (ev.embedding.empty())
    return fanout_.fail(to_api_error({errc::internal, "the engine returned no hidden state for an embedding request"}));
  const auto& model = state_.model();
  embeddings_[std::size_t(index)] = finish_embedding(ev.embedding, request_.dimensions, model.embedding.normalize);
  if (!fanout_.is_done()) return;
  const auto& name = request_.adapter.empty() ? model.name : request_.adapter;  // an adapter answers as itself
  fanout_.emit(embeddings_response(name, request_, embeddings_));
}

}  // namespace inflight::gateway

#pragma once
/// The Messages API's two routes over the one completion path:
///   POST /v1/messages               a chat call with the Anthropic shape (anthropic_shape.hpp)
///   POST /v1/messages/count_tokens  {"input_tokens"}: the prompt /v1/messages would render
/// A request refused before the call starts is an error in Anthropic's shape, with the
/// Messages request's field names.

#include <memory>
#include <string>

#include "actors/gateway/completion_call.hpp"
#include "actors/gateway/errors.hpp"
#include "actors/gateway/gateway_state.hpp"
#include "actors/gateway/http_reply.hpp"

namespace inflight::gateway {

/// A /v1/messages call ready for try_start (its shape set), from the body text; a 400
/// (404 for another model) when the body is refused.
api_result<std::shared_ptr<completion_call>> try_make_messages_call(gateway_state& state, const std::string& body_text,
                                                                    post_fn post, completion_call::emit_fn emit);

/// The answer of POST /v1/messages/count_tokens: {"input_tokens": n}, or the error.
http_reply count_tokens_reply(gateway_state& state, const std::string& body_text);

}  // namespace inflight::gateway

#pragma once
/// The front door of /v1/responses: POST makes a chat call (completion_call) that wears
/// the Responses shape; GET and DELETE /v1/responses/{id} read and remove a stored
/// response (server.responses_store_max, server.responses_store_ttl_s).

#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "actors/gateway/completion_call.hpp"
#include "actors/gateway/gateway_state.hpp"
#include "actors/gateway/http_reply.hpp"

namespace inflight::gateway {

/// A POST /v1/responses body checked, translated and parsed into a chat call with the
/// Responses shape, not started yet. Errors: a 400 naming the Responses field, a 404 for
/// a previous_response_id that is not stored, a 404 for another model's name.
/// `ordered`: the same body in the client's key order (parse_ordered_body).
api_result<std::shared_ptr<completion_call>> try_make_responses_call(gateway_state& state, const nlohmann::json& body,
                                                                     const nlohmann::ordered_json& ordered, post_fn post,
                                                                     completion_call::emit_fn emit);

/// GET /v1/responses/{id} (the stored Response object) and DELETE /v1/responses/{id}
/// ({id, object: "response", deleted: true}); 404 when it is not stored.
http_reply answer_stored_response(gateway_state& state, std::string_view method, std::string_view id);

}  // namespace inflight::gateway

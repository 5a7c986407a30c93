#pragma once
/// Response shapes of the scoring endpoints (pure functions of their arguments):
///
///   rerank: {id, model, usage: {prompt_tokens, total_tokens},
///            results: [{index, relevance_score, document: {text}}]}   highest score first
///   score:  {id, object: "list", created, model,
///            data: [{index, object: "score", score}], usage}          input order

#include <vector>

#include <nlohmann/json.hpp>

#include "actors/gateway/openai_response.hpp"
#include "actors/gateway/score_request.hpp"

namespace inflight::gateway {

/// `scores[i]` belongs to pair i of `request`. Ties keep the input order; top_n > 0
/// keeps that many results; `document` only when return_documents.
nlohmann::json rerank_response(const response_meta& meta, const score_request& request,
                               const std::vector<double>& scores);

nlohmann::json score_response(const response_meta& meta, const score_request& request,
                              const std::vector<double>& scores);

}  // namespace inflight::gateway

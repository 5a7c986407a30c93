#pragma once
/// Response shapes of the scoring endpoints (pure functions of their arguments):
///
///   rerank: {id, model, usage: {prompt_tokens, total_tokens, prompt_tokens_details},
///            results: [{index, relevance_score, document: {text}}]}   highest score first
///   score:  {id, object: "list", created, model,
///            data: [{index, object: "score", score}], usage}          input order

#include <vector>

#include <nlohmann/json.hpp>

#include "actors/gateway/openai_response.hpp"
#include "actors/gateway/score_request.hpp"

namespace inflight::gateway {

/// `scores[i]` belongs to pair i of `request`. Ties keep the input order; top_n > 0
/// keeps that many results; `document` only when return_documents. `num_cached_tokens`:
/// prompt tokens of all pairs taken from the prefix cache (usage.prompt_tokens_details).
nlohmann::json rerank_response(const response_meta& meta, const score_request& request,
                               const std::vector<double>& scores, int num_cached_tokens = 0);

nlohmann::json score_response(const response_meta& meta, const score_request& request,
                              const std::vector<double>& scores, int num_cached_tokens = 0);

}  // namespace inflight::gateway

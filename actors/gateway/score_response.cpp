#include "actors/gateway/score_response.hpp"

#include <algorithm>
#include <numeric>

namespace inflight::gateway {

using nlohmann::json;

namespace {

/// Scoring generates nothing: every token is a prompt token.
json usage_of(const score_request& request, int num_cached_tokens, bool has_completion_tokens) {
  const int num_tokens = request.num_prompt_tokens();
  json usage = {{"prompt_tokens", num_tokens},
                {"total_tokens", num_tokens},
                {"prompt_tokens_details", {{"cached_tokens", num_cached_tokens}}}};
  if (has_completion_tokens) usage["completion_tokens"] = 0;
  return usage;
}

}  // namespace

json rerank_response(const response_meta& meta, const score_request& request, const std::vector<double>& scores,
                     int num_cached_tokens) {
  std::vector<int> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return scores[a] > scores[b]; });
  if (request.top_n > 0 && request.top_n < int(order.size())) order.resize(std::size_t(request.top_n));
  json results = json::array();
  for (const int i : order) {
    json item = {{"index", i}, {"relevance_score", scores[std::size_t(i)]}};
    if (request.return_documents) item["document"] = {{"text", request.documents[std::size_t(i)]}};
    results.push_back(std::move(item));
  }
  return {{"id", meta.id},
          {"model", meta.model},
          {"usage", usage_of(request, num_cached_tokens, false)},
          {"results", std::move(results)}};
}

json score_response(const response_meta& meta, const score_request& request, const std::vector<double>& scores,
                    int num_cached_tokens) {
  json data = json::array();
  for (std::size_t i = 0; i < scores.size(); ++i) data.push_back({{"index", i}, {"object", "score"}, {"score", scores[i]}});
  return {{"id", meta.id},
          {"object", "list"},
          {"created", meta.created},
          {"model", meta.model},
          {"data", std::move(data)},
          {"usage", usage_of(request, num_cached_tokens, true)}};
}

}  // namespace inflight::gateway

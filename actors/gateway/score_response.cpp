#include "actors/gateway/score_response.hpp"

#include <algorithm>
#include <numeric>

namespace inflight::gateway {

using nlohmann::json;

json rerank_response(const response_meta& meta, const score_request& request, const std::vector<double>& scores) {
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
  const int num_tokens = request.num_prompt_tokens();
  return {{"id", meta.id},
          {"model", meta.model},
          {"usage", {{"prompt_tokens", num_tokens}, {"total_tokens", num_tokens}}},
          {"results", std::move(results)}};
}

json score_response(const response_meta& meta, const score_request& request, const std::vector<double>& scores) {
  json data = json::array();
  for (std::size_t i = 0; i < scores.size(); ++i) data.push_back({{"index", i}, {"object", "score"}, {"score", scores[i]}});
  const int num_tokens = request.num_prompt_tokens();
  return {{"id", meta.id},
          {"object", "list"},
          {"created", meta.created},
          {"model", meta.model},
          {"data", std::move(data)},
          {"usage", {{"prompt_tokens", num_tokens}, {"total_tokens", num_tokens}, {"completion_tokens", 0}}}};
}

}  // namespace inflight::gateway

#pragma once
/// Parsing of relevance-scoring bodies into tokenized query-document prompts (pure
/// functions: no sockets, no engine):
///
///   /v1/rerank (and /rerank, /v2/rerank, WebSocket "rerank"), as Jina, Cohere, vLLM
///   and llama.cpp take it: {model, query, documents: [string | {text}], top_n,
///   return_documents}
///   /v1/score (and /score), as vLLM takes it: {model, text_1, text_2}, each a string or
///   a list: 1:1, 1:N or N:N pairs.
///
/// Each pair becomes one prompt (core/api/reranker.hpp); every prompt of a query
/// starts with the same prefix tokens.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"
#include "actors/gateway/served_model.hpp"

namespace inflight::gateway {

enum class score_api {
  rerank,  ///< results sorted by score, cut to top_n
  score,   ///< one score per pair, in input order
};

struct score_request {
  score_api api = score_api::rerank;
  std::vector<std::vector<token_id>> prompts;  ///< one per pair, in input order
  std::vector<std::string> documents;          ///< rerank: the document texts (return_documents)
  int top_n = 0;                               ///< rerank: results kept (0 = all)
  bool return_documents = true;                ///< rerank: results carry {"document": {"text"}}
  int priority = 0;
  std::string cache_salt;                      ///< prefix caching: pairs share cached K/V only within a salt
  std::string adapter;                         ///< the LoRA adapter the `model` field names ("": none)

  int num_pairs() const { return int(prompts.size()); }
  /// Prompt tokens of every pair together (the usage count).
  int num_prompt_tokens() const;
};

/// A /v1/rerank body (or a WebSocket "rerank" message).
api_result<score_request> try_parse_rerank(const nlohmann::json& body, const served_model& model);
/// A /v1/score body.
api_result<score_request> try_parse_score(const nlohmann::json& body, const served_model& model);

}  // namespace inflight::gateway

#pragma once
// A Qwen3-shaped dummy model with the byte tokenizer and one-byte yes/no words, for the
// scoring tests of the engine and the gateway.

#include "core/api/reranker.hpp"
#include "tests/actors/engine/engine_fixture.hpp"

namespace inflight::test {

/// Random Qwen3 weights (q/k norms), byte tokenizer; rerank words "y" / "n".
inline deployment qwen3_scoring_deployment(const std::string& policy = "splitfuse", int budget = 64) {
  deployment d;
  d.model.format = "dummy";
  auto& s = d.model.dummy;
  s.family = "qwen3";
  s.hidden_size = 64;
  s.intermediate_size = 96;
  s.num_layers = 2;
  s.num_heads = 4;
  s.num_kv_heads = 2;
  s.head_dim = 32;
  s.max_position = 512;
  s.seed = 3;
  d.engine.kv_blocks = 256;
  d.engine.max_num_batched_tokens = budget;
  d.engine.max_num_seqs = 16;
  d.engine.threads = 1;
  d.scheduler.policy = policy;
  d.scheduler.plugin_dir = INFLIGHT_TEST_PLUGIN_DIR;
  d.rerank.mode = rerank_mode::required;
  // Short prompts keep the tests fast; the default template is tested in tests/core.
  d.rerank.prompt_template = "<{instruction}>\nQuery: {query}\nDocument: {document}\nRelevant (y/n):";
  d.rerank.instruction = "judge relevance";
  d.rerank.yes_word = "y";
  d.rerank.no_word = "n";
  return d;
}

inline reranker make_reranker(const deployment& d, const engine& eng) {
  auto r = reranker::try_create(d.rerank, eng.model().tok);
  REQUIRE(r.has_value());
  return std::move(*r);
}

inline generate_request scoring_request(const reranker& r, const std::string& query, const std::string& document) {
  generate_request req;
  req.prompt = r.encode(r.encode_prefix(query), query, document).tokens;
  const auto rows = r.score_rows();
  req.score_rows.assign(rows.begin(), rows.end());
  return req;
}

}  // namespace inflight::test

#pragma once
// One offline rerank run: the engine in this process, each request's documents
// submitted together as prefill-only scoring requests, at most `max_concurrency`
// requests in flight (0 = all at once); per request the time from submission until
// its last document has a score.

#include <vector>

#include "actors/engine/engine.hpp"
#include "core/api/reranker.hpp"
#include "core/bench/rerank_workload.hpp"

namespace inflight::app {

struct rerank_run {
  std::vector<double> latency_s;            ///< per request
  std::vector<std::vector<double>> scores;  ///< per request, per document
  int num_documents = 0;
  long long num_prompt_tokens = 0;
  long long num_cached_tokens = 0;          ///< prompt tokens taken from the prefix cache
  int num_failed = 0;                       ///< documents that finished without a score
  std::string first_error;
  double duration_s = 0.0;
  engine_snapshot snapshot;
};

result<rerank_run> run_rerank_workload(const deployment& d, const loaded_model& model, const reranker& rerank,
                                       const std::vector<bench::rerank_case>& cases, int max_concurrency);

}  // namespace inflight::app

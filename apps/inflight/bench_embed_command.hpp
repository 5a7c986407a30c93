#pragma once
// `inflight bench offline --workload embed`: the rerank workload's texts (each request's
// query and documents) embedded in this process under each policy, each text one
// prefill-only request; prints inputs/s, tokens/s and per-request latency, alone or with
// generation requests running alongside (their tokens/s and TPOT beside).

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/deployment.hpp"
#include "core/model/model_loader.hpp"

namespace inflight::app {

struct embed_bench_options {
  std::vector<std::string> policies;
  std::string size = "small";
  int num_requests = 0;  ///< 0 = the workload's own count
  std::uint64_t seed = 0;
  /// Prefix-caching settings to run each policy with, in order; empty = the deployment's.
  std::vector<bool> prefix_caching;
  std::string result_json;
  int num_generations = 0;  ///< generation requests submitted with the inputs (0 = embeddings alone)
};

void run_embed_bench(const embed_bench_options& o, const deployment& base, const loaded_model& model);

}  // namespace inflight::app

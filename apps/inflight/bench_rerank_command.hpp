#pragma once
// `inflight bench offline --workload rerank`: one query and many documents per request,
// scored in this process under each policy; prints documents/s and per-request latency.

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/deployment.hpp"
#include "core/model/model_loader.hpp"

namespace inflight::app {

struct rerank_bench_options {
  std::vector<std::string> policies;
  std::string size = "small";
  int num_requests = 0;     ///< 0 = the workload's own count
  std::uint64_t seed = 0;
  int max_concurrency = 0;  ///< requests in flight at once (0 = all at once)
  /// Prefix-caching settings to run each policy with, in order: {true, false} puts
  /// caching on and off side by side; empty = the deployment's engine.enable_prefix_caching.
  std::vector<bool> prefix_caching;
  std::string result_json;
};

void run_rerank_bench(const rerank_bench_options& o, const deployment& base, const loaded_model& model);

}  // namespace inflight::app

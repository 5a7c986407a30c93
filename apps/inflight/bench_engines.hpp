#pragma once
// What each engine did during a `bench serve` run, from the server's /metrics read
// before and after it: behind a router, the engines' own counters under their
// engine="host:port" label (exact: the engines count them); in front of one engine,
// its counters unlabelled.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace inflight::app {

struct engine_work {
  std::string engine;                  ///< host:port, or "server" without a router
  std::uint64_t num_requests = 0;      ///< finished requests (request_success_total)
  std::uint64_t num_prompt_tokens = 0; ///< prompt tokens looked up at admission
  std::uint64_t num_cached_tokens = 0; ///< of them, found in the prefix cache
  std::uint64_t num_prefill_tokens() const { return num_prompt_tokens - num_cached_tokens; }
};

/// Each engine's counters between two scrapes of /metrics (an empty list when either
/// is missing).
std::vector<engine_work> engine_work_between(const std::string& before, const std::string& after);

/// The table, and a total line with the hit rate over all engines.
void print_engine_work(std::FILE* out, const std::vector<engine_work>& engines);

nlohmann::json to_json(const std::vector<engine_work>& engines);

}  // namespace inflight::app

#pragma once
/// What an engine tells the routers in front of it, after each step that changed it:
/// how its prefix cache changed (full-block hashes, as its KV manager hands them out:
/// core/engine/kv/kv_manager.hpp take_cache_delta) and its load. A full report carries the
/// whole cache instead, on (re)subscription: the router forgets what it knew of the
/// engine and starts again from it, so a router that connects late has an exact index.

#include <vector>

#include "core/engine/kv/block_hash.hpp"

namespace inflight {

struct engine_report {
  bool is_full = false;             ///< `added` is the whole cache; `evicted` is empty
  std::vector<block_hash> added;
  std::vector<block_hash> evicted;
  int num_waiting = 0;
  int num_running = 0;
  int num_free_blocks = 0;
  int num_total_blocks = 0;
  int block_size = 0;               ///< tokens per KV block: the hashes mean nothing under another
};

}  // namespace inflight

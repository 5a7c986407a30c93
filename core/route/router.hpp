#pragma once
/// The choice of an engine for each request, in front of several engines: their
/// availability and load as last reported, an exact index of their cached KV blocks,
/// and a routing policy (plugins/abi/inflight_route.h) that decides. Thread-safe.
///
/// Between two load reports the router counts what it sent: a routed request adds one
/// to its engine's waiting count until the engine's next report replaces it, so a burst
/// of requests does not all go to the engine that looked idlest a moment ago.

#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "core/base/error.hpp"
#include "core/engine/kv/block_hash.hpp"
#include "core/route/engine_report.hpp"
#include "core/route/prefix_index.hpp"
#include "core/route/route_policy.hpp"

namespace inflight {

/// An engine's load as it reports it.
struct engine_load {
  int num_waiting = 0;
  int num_running = 0;
  int num_free_blocks = 0;
  int num_total_blocks = 0;
};

class router {
 public:
  /// `block_size`: tokens per KV block of the engines (they must agree).
  router(route_policy policy, int num_engines, int block_size);

  int num_engines() const { return static_cast<int>(engines_.size()); }
  int block_size() const { return block_size_; }
  const std::string& policy_name() const { return policy_.name(); }

  /// An engine that went away, or came back. Going away forgets its cached blocks.
  void set_available(int engine, bool is_available);
  void set_load(int engine, const engine_load& load);
  void add_blocks(int engine, std::span<const block_hash> hashes);
  void evict_blocks(int engine, std::span<const block_hash> hashes);
  /// An engine's report (core/route/engine_report.hpp): its load, and its cached blocks
  /// into the index (a full report replaces them). Refused, the index left as it was,
  /// when the engine's block size is not this router's: its hashes cannot match.
  result<void> apply_report(int engine, const engine_report& report);
  /// Blocks the index holds for `engine`.
  std::size_t num_indexed_blocks(int engine) const;

  /// The engine for a prompt of `num_prompt_tokens` tokens whose full blocks hash to
  /// `prompt_blocks` (under the request's cache_salt). errc::unavailable when no engine
  /// is available. A policy answer that names no available engine is replaced by the
  /// least-loaded one and counted (num_refused_choices()). The prompt's blocks become
  /// pending on the chosen engine until release().
  result<int> choose(std::span<const block_hash> prompt_blocks, int num_prompt_tokens);

  /// A request choose() sent to `engine` finished there, or never got there: its
  /// prompt's blocks are no longer pending on it (prefix_index).
  void release(int engine, std::span<const block_hash> prompt_blocks);

  std::uint64_t num_routed(int engine) const;
  std::uint64_t num_refused_choices() const;
  /// Leading blocks of `prompt_blocks` that `engine` holds, as the index knows it.
  int num_cached(int engine, std::span<const block_hash> prompt_blocks) const;

 private:
  struct engine_entry {
    bool is_available = true;
    engine_load load;
    std::uint64_t num_routed = 0;
  };

  mutable std::mutex mutex_;
  route_policy policy_;
  int block_size_;
  std::vector<engine_entry> engines_;
  prefix_index index_;
  std::uint64_t num_refused_ = 0;
  std::vector<inflight_route_engine> view_;  // scratch
};

}  // namespace inflight

#pragma once
/// What the scheduler and the KV manager say to each other once per step, as plain
/// values (they cross an actor boundary in the engine; tests hand them over directly):
///
///   scheduler.schedule()  -> kv_request   releases, then asks in policy order
///   kv_manager.try_grant() -> kv_grant    block tables, preemptions, a fresh snapshot
///   scheduler.on_grant()  -> step_plan

#include <cstdint>
#include <optional>
#include <vector>

#include "core/base/types.hpp"
#include "core/engine/kv/block_hash.hpp"

namespace inflight {

/// Blocks that hold `num_tokens` tokens (what a table covering them needs).
constexpr int num_blocks_for(int num_tokens, int block_size) {
  return num_tokens <= 0 ? 0 : (num_tokens + block_size - 1) / block_size;
}

/// A sequence whose blocks go back to the pool.
struct kv_release {
  seq_id id = 0;
  int num_computed_tokens = 0;  ///< tokens whose K/V are written (their full blocks stay cached)
  bool is_finished = true;      ///< false: preempted, it will ask again later
};

/// Blocks for `num_tokens` more tokens of one sequence this step.
struct kv_ask {
  seq_id id = 0;
  int num_tokens = 0;
  /// Running: tokens computed so far (its table covers them). Admission: ignored.
  int num_computed_tokens = 0;
  /// prompt + generated tokens: an admission never computes past them.
  int num_total_tokens = 0;
  /// A waiting sequence: it gets a new table and never preempts anyone. A running
  /// one grows its table and may preempt victims to do so.
  bool is_admission = false;
  /// Of num_tokens, the last ones that are a speculative draft (a running sequence):
  /// granted only as far as free blocks go, never preempting anyone for them.
  int num_draft_tokens = 0;
};

/// Hashes of the full blocks a sequence gained since the last request (all of its
/// prompt's on arrival), appended to the chain the KV manager keeps for it. None are
/// sent when prefix caching is off: without hashes nothing is cached.
struct kv_block_hashes {
  seq_id id = 0;
  std::vector<block_hash> hashes;
};

/// The draft model's KV space (speculative decoding's `draft` drafter): a second pool
/// with the same owner, without prefix caching or victims. Its releases go first, then
/// its asks; an ask short of blocks gets what is free (a running one that gets none
/// loses its table: it is listed in kv_space_grant::preempted).
struct kv_space_request {
  std::vector<kv_release> releases;
  std::vector<kv_ask> asks;
  bool empty() const { return releases.empty() && asks.empty(); }
};

/// One step's request: new hashes, releases, then the asks in order (earlier asks get
/// blocks first). A running ask short of blocks preempts the first of `victims` that
/// is neither itself nor granted yet, releasing it, and so on (the same rule as
/// vLLM: lowest priority, latest admitted first; the scheduler orders the list).
struct kv_request {
  std::vector<kv_block_hashes> new_hashes;
  std::vector<kv_release> releases;
  std::vector<kv_ask> asks;
  std::vector<kv_release> victims;
  /// Run when no ask got a single token (a policy that scheduled nothing, or only
  /// admissions that found no block): the engine never stalls.
  std::optional<kv_ask> fallback;
  /// The draft model's space, granted after the target's.
  kv_space_request draft;
};

/// The answer to one ask.
struct kv_granted {
  seq_id id = 0;
  int num_tokens = 0;           ///< granted (<= asked; 0 = nothing this step; drafts are the last ones)
  /// Where the step starts for this sequence: an admission starts after its cached
  /// prefix (whole blocks, never its last token).
  int num_computed_tokens = 0;
  /// The whole table, covering num_computed + num_tokens: no more, so the blocks a
  /// refuted draft wrote into past them go back to the pool.
  std::vector<block_id> block_table;
};

/// How many leading tokens of a waiting sequence are cached (whole blocks).
struct kv_cached_prefix {
  seq_id id = 0;
  int num_tokens = 0;
};

/// The KV state the scheduler plans the next step from.
struct kv_snapshot {
  int num_blocks = 0;
  int block_size = 16;
  int num_free_blocks = 0;      ///< cached blocks nobody holds count as free
  int num_cached_blocks = 0;    ///< blocks carrying a hash, in use or free
  std::uint64_t num_evictions = 0;
  /// Waiting sequences with a cached prefix (those without one are not listed).
  std::vector<kv_cached_prefix> cached_prefixes;
  /// The draft model's space (0 blocks: none).
  int num_draft_blocks = 0;
  int num_free_draft_blocks = 0;
  double usage() const { return num_blocks > 0 ? 1.0 - double(num_free_blocks) / num_blocks : 0.0; }
};

struct kv_grant {
  std::vector<kv_granted> grants;   ///< one per ask, in order; then the fallback's, when it ran
  bool is_fallback_used = false;
  std::vector<seq_id> preempted;    ///< victims released to make room, in order
  kv_snapshot snapshot;             ///< after this grant
  /// The prefix cache's net change since the previous grant (kv_manager::take_cache_delta;
  /// filled by the kv-allocator actor, which reports it to a router through the scheduler).
  cache_delta cache_changes;
  /// The draft space's answers: one per kv_request::draft ask, in order, and the
  /// running sequences that lost their draft tables.
  std::vector<kv_granted> draft_grants;
  std::vector<seq_id> draft_preempted;
};

}  // namespace inflight

#pragma once
/// The kv-allocator actor: the authority over the block pool. Each step the scheduler
/// sends its releases and reservations in one message; the reply carries the block
/// tables, which the scheduler checks against its own ledger.

#include "actors/messages.hpp"

namespace inflight {

struct kv_allocator_state {
  std::optional<block_pool> pool;
  static inline const char* name = "kv-allocator";
};

kv_allocator_actor::behavior_type kv_allocator_fn(kv_allocator_actor::stateful_pointer<kv_allocator_state> self,
                                                  int num_blocks, int block_size);

/// Applies one step's releases then reservations to `pool` (the actor's handler).
kv_reply apply_kv_request(block_pool& pool, const kv_request& request);

}  // namespace inflight

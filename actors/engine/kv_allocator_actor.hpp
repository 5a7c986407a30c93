#pragma once
/// The kv-allocator actor: the one owner of KV blocks (core kv_manager: the block
/// pool and every sequence's block table). Once per step the scheduler actor sends its
/// kv_request; the reply is the grant, with the snapshot the next step plans from.

#include <memory>
#include <optional>

#include "actors/engine/messages.hpp"
#include "core/engine/kv/kv_manager.hpp"

namespace inflight {

struct kv_allocator_state {
  std::optional<kv_manager> kv;
  static inline const char* name = "kv-allocator";
};

kv_allocator_actor::behavior_type kv_allocator_fn(kv_allocator_actor::stateful_pointer<kv_allocator_state> self,
                                                  std::shared_ptr<std::optional<kv_manager>> kv);

}  // namespace inflight

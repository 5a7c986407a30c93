#include "actors/kv_allocator_actor.hpp"

namespace inflight {

kv_allocator_actor::behavior_type kv_allocator_fn(kv_allocator_actor::stateful_pointer<kv_allocator_state> self,
                                                  std::shared_ptr<std::optional<kv_manager>> kv) {
  self->state.kv = std::move(*kv);
  return {
      [self](grant_atom, const kv_request& request) -> kv_reply {
        if (!self->state.kv) return make_error(errc::internal, "the kv allocator has no block pool");
        return self->state.kv->try_grant(request);
      },
  };
}

}  // namespace inflight

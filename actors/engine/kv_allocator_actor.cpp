#include "actors/engine/kv_allocator_actor.hpp"

namespace inflight {

kv_allocator_actor::behavior_type kv_allocator_fn(kv_allocator_actor::stateful_pointer<kv_allocator_state> self,
                                                  std::shared_ptr<std::optional<kv_manager>> kv) {
  self->state.kv = std::move(*kv);
  return {
      [self](grant_atom, const kv_request& request) -> kv_reply {
        if (!self->state.kv) return make_error(errc::internal, "the kv allocator has no block pool");
        auto grant = self->state.kv->try_grant(request);
        if (grant) grant->cache_changes = self->state.kv->take_cache_delta();
        return grant;
      },
      [self](full_report_atom) -> cached_blocks {
        if (!self->state.kv) return {};
        (void)self->state.kv->take_cache_delta();  // the full report covers it
        return {self->state.kv->cached_hashes()};
      },
  };
}

}  // namespace inflight

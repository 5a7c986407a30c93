#include "actors/kv_allocator_actor.hpp"

namespace inflight {

kv_reply apply_kv_request(block_pool& pool, const kv_request& request) {
  kv_reply reply;
  for (auto id : request.releases) pool.release(id);
  if (auto ok = pool.try_reserve(request.reservations); !ok) {
    reply.error = ok.error().message;
  } else {
    for (const auto& r : request.reservations) {
      auto table = pool.block_table(r.id);
      reply.tables.emplace_back(table.begin(), table.end());
    }
  }
  reply.num_free_blocks = pool.num_free_blocks();
  return reply;
}

kv_allocator_actor::behavior_type kv_allocator_fn(kv_allocator_actor::stateful_pointer<kv_allocator_state> self,
                                                  int num_blocks, int block_size) {
  auto pool = block_pool::try_create(num_blocks, block_size);
  if (pool) self->state.pool.emplace(std::move(*pool));
  return {
      [self](reserve_atom, const kv_request& request) -> kv_reply {
        if (!self->state.pool) return kv_reply{"no block pool", {}, 0};
        return apply_kv_request(*self->state.pool, request);
      },
  };
}

}  // namespace inflight

#include "core/route/prefix_index.hpp"

namespace inflight {

void prefix_index::add(int engine, std::span<const block_hash> hashes) {
  auto& held = blocks_[static_cast<std::size_t>(engine)];
  held.insert(hashes.begin(), hashes.end());
}

void prefix_index::evict(int engine, std::span<const block_hash> hashes) {
  auto& held = blocks_[static_cast<std::size_t>(engine)];
  for (const auto& h : hashes) held.erase(h);
}

void prefix_index::clear(int engine) {
  blocks_[static_cast<std::size_t>(engine)].clear();
  pending_[static_cast<std::size_t>(engine)].clear();
}

void prefix_index::add_pending(int engine, std::span<const block_hash> hashes) {
  auto& pending = pending_[static_cast<std::size_t>(engine)];
  for (const auto& h : hashes) ++pending[h];
}

void prefix_index::remove_pending(int engine, std::span<const block_hash> hashes) {
  auto& pending = pending_[static_cast<std::size_t>(engine)];
  for (const auto& h : hashes) {
    auto it = pending.find(h);
    if (it != pending.end() && --it->second <= 0) pending.erase(it);
  }
}

int prefix_index::num_cached(int engine, std::span<const block_hash> prompt) const {
  const auto& held = blocks_[static_cast<std::size_t>(engine)];
  const auto& pending = pending_[static_cast<std::size_t>(engine)];
  int n = 0;
  for (const auto& h : prompt) {
    if (!held.contains(h) && !pending.contains(h)) break;
    ++n;
  }
  return n;
}

}  // namespace inflight

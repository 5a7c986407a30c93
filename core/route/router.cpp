#include "core/route/router.hpp"

#include <string>

namespace inflight {

router::router(route_policy policy, int num_engines, int block_size)
    : policy_(std::move(policy)),
      block_size_(block_size),
      engines_(static_cast<std::size_t>(num_engines)),
      index_(num_engines) {}

void router::set_available(int engine, bool is_available) {
  std::lock_guard lock(mutex_);
  auto& e = engines_.at(static_cast<std::size_t>(engine));
  if (!is_available) index_.clear(engine);
  e.is_available = is_available;
}

void router::set_load(int engine, const engine_load& load) {
  std::lock_guard lock(mutex_);
  engines_.at(static_cast<std::size_t>(engine)).load = load;
}

void router::add_blocks(int engine, std::span<const block_hash> hashes) {
  std::lock_guard lock(mutex_);
  index_.add(engine, hashes);
}

void router::evict_blocks(int engine, std::span<const block_hash> hashes) {
  std::lock_guard lock(mutex_);
  index_.evict(engine, hashes);
}

result<void> router::apply_report(int engine, const engine_report& report) {
  std::lock_guard lock(mutex_);
  auto& e = engines_.at(static_cast<std::size_t>(engine));
  e.load = {report.num_waiting, report.num_running, report.num_free_blocks, report.num_total_blocks};
  if (report.block_size != block_size_)
    return make_error(errc::invalid_argument,
                      "the engine reports KV blocks of " + std::to_string(report.block_size) +
                          " tokens, the router hashes prompts in blocks of " + std::to_string(block_size_) +
                          ": its prefix cache cannot be matched (give the router the engines' engine.block_size)");
  if (report.is_full) index_.clear(engine);
  index_.evict(engine, report.evicted);
  index_.add(engine, report.added);
  return {};
}

std::size_t router::num_indexed_blocks(int engine) const {
  std::lock_guard lock(mutex_);
  return index_.num_blocks(engine);
}

result<int> router::choose(std::span<const block_hash> prompt_blocks, int num_prompt_tokens) {
  std::lock_guard lock(mutex_);
  view_.clear();
  const inflight_route_engine* least = nullptr;
  for (std::size_t i = 0; i < engines_.size(); ++i) {
    const auto& e = engines_[i];
    inflight_route_engine v{};
    v.index = static_cast<std::uint32_t>(i);
    v.is_available = e.is_available ? 1 : 0;
    v.num_waiting = e.load.num_waiting;
    v.num_running = e.load.num_running;
    v.num_free_blocks = e.load.num_free_blocks;
    v.num_total_blocks = e.load.num_total_blocks;
    v.num_cached_blocks = e.is_available ? index_.num_cached(static_cast<int>(i), prompt_blocks) : 0;
    v.num_routed = e.num_routed;
    view_.push_back(v);
  }
  for (const auto& v : view_) {
    if (!v.is_available) continue;
    const auto load = inflight_route_load(&v), best = least ? inflight_route_load(least) : 0;
    if (least == nullptr || load < best || (load == best && v.num_routed < least->num_routed)) least = &v;
  }
  if (least == nullptr) return make_error(errc::unavailable, "no engine is available");
  const inflight_route_view view{view_.data(), view_.size(),
                                 {num_prompt_tokens, static_cast<std::int32_t>(prompt_blocks.size()), block_size_}};
  auto chosen = policy_.choose(view);
  std::uint32_t index = least->index;
  if (chosen && *chosen < view_.size() && view_[*chosen].is_available) index = *chosen;
  else ++num_refused_;
  auto& e = engines_[index];
  ++e.num_routed;
  ++e.load.num_waiting;  // until the engine's next report
  index_.add_pending(static_cast<int>(index), prompt_blocks);
  return static_cast<int>(index);
}

void router::release(int engine, std::span<const block_hash> prompt_blocks) {
  std::lock_guard lock(mutex_);
  index_.remove_pending(engine, prompt_blocks);
}

std::uint64_t router::num_routed(int engine) const {
  std::lock_guard lock(mutex_);
  return engines_.at(static_cast<std::size_t>(engine)).num_routed;
}

std::uint64_t router::num_refused_choices() const {
  std::lock_guard lock(mutex_);
  return num_refused_;
}

int router::num_cached(int engine, std::span<const block_hash> prompt_blocks) const {
  std::lock_guard lock(mutex_);
  return index_.num_cached(engine, prompt_blocks);
}

}  // namespace inflight

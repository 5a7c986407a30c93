#include "actors/gateway/responses_store.hpp"

#include <utility>
#include <vector>

namespace inflight::gateway {

nlohmann::json conversation_items(const std::shared_ptr<const conversation_turn>& turn) {
  std::vector<const conversation_turn*> turns;
  for (const conversation_turn* t = turn.get(); t != nullptr; t = t->parent.get()) turns.push_back(t);
  nlohmann::json out = nlohmann::json::array();
  for (auto it = turns.rbegin(); it != turns.rend(); ++it)
    for (const auto& item : (*it)->items) out.push_back(item);
  return out;
}

responses_store::responses_store(std::size_t max_entries, double ttl_s, now_fn now)
    : max_entries_(max_entries),
      ttl_(std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(ttl_s))),
      now_(std::move(now)) {}

bool responses_store::is_expired(const slot& s, clock::time_point now) const {
  return ttl_ > clock::duration::zero() && now - s.stored_at >= ttl_;
}

void responses_store::drop_expired(clock::time_point now) {
  // order_ is oldest first, and every entry has the same TTL: stop at the first live one.
  while (!order_.empty()) {
    const auto it = slots_.find(order_.front());
    if (!is_expired(it->second, now)) return;
    slots_.erase(it);
    order_.pop_front();
  }
}

void responses_store::put(const std::string& id, entry e) {
  if (max_entries_ == 0) return;
  std::lock_guard lock(mutex_);
  const auto now = now_();
  drop_expired(now);
  if (const auto it = slots_.find(id); it != slots_.end()) {
    order_.erase(it->second.age);
    slots_.erase(it);
  }
  while (slots_.size() >= max_entries_) {
    slots_.erase(order_.front());
    order_.pop_front();
  }
  order_.push_back(id);
  slots_.emplace(id, slot{std::move(e), now, std::prev(order_.end())});
}

std::optional<responses_store::entry> responses_store::find(const std::string& id) {
  std::lock_guard lock(mutex_);
  drop_expired(now_());
  const auto it = slots_.find(id);
  if (it == slots_.end()) return std::nullopt;
  return it->second.value;
}

bool responses_store::erase(const std::string& id) {
  std::lock_guard lock(mutex_);
  drop_expired(now_());
  const auto it = slots_.find(id);
  if (it == slots_.end()) return false;
  order_.erase(it->second.age);
  slots_.erase(it);
  return true;
}

std::size_t responses_store::size() {
  std::lock_guard lock(mutex_);
  drop_expired(now_());
  return slots_.size();
}

}  // namespace inflight::gateway

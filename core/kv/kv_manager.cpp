#include "core/kv/kv_manager.hpp"

#include <algorithm>
#include <string>

namespace inflight {
namespace {

std::string seq_name(seq_id id) { return "sequence " + std::to_string(id); }

}  // namespace

result<kv_manager> kv_manager::try_create(int num_blocks, int block_size) {
  auto pool = block_pool::try_create(num_blocks, block_size);
  if (!pool) return std::unexpected(pool.error());
  return kv_manager(std::move(*pool));
}

kv_snapshot kv_manager::snapshot() const {
  kv_snapshot s;
  s.num_blocks = pool_.num_blocks();
  s.block_size = pool_.block_size();
  s.num_free_blocks = pool_.num_free_blocks();
  return s;
}

std::span<const block_id> kv_manager::block_table(seq_id id) const {
  auto it = tables_.find(id);
  if (it == tables_.end()) return {};
  return it->second;
}

result<void> kv_manager::check_request(const kv_request& request) const {
  std::unordered_set<seq_id> released, asked;
  for (const auto& r : request.releases) released.insert(r.id);
  auto check_ask = [&](const kv_ask& ask) -> result<void> {
    const std::string who = "kv request: " + seq_name(ask.id);
    if (ask.num_tokens < 1 || ask.num_computed_tokens < 0)
      return make_error(errc::invalid_argument, who + " asks " + std::to_string(ask.num_tokens) + " tokens");
    const bool holds = has_table(ask.id) && !released.contains(ask.id);
    if (ask.is_admission && holds)
      return make_error(errc::invalid_argument, who + " is admitted but already holds blocks");
    if (ask.is_admission && ask.num_total_tokens < 1)
      return make_error(errc::invalid_argument, who + " is admitted with no tokens");
    if (!ask.is_admission && !holds)
      return make_error(errc::invalid_argument, who + " is running but holds no blocks");
    if (!ask.is_admission &&
        ask.num_computed_tokens > static_cast<int>(block_table(ask.id).size()) * pool_.block_size())
      return make_error(errc::invalid_argument, who + " has computed more tokens than its blocks hold");
    return {};
  };
  for (const auto& ask : request.asks) {
    if (!asked.insert(ask.id).second)
      return make_error(errc::invalid_argument, "kv request: " + seq_name(ask.id) + " is asked twice");
    if (auto ok = check_ask(ask); !ok) return ok;
  }
  if (request.fallback) return check_ask(*request.fallback);
  return {};
}

result<kv_grant> kv_manager::try_grant(const kv_request& request) {
  if (auto ok = check_request(request); !ok) return std::unexpected(ok.error());
  for (const auto& r : request.releases) release(r.id);
  grant_state g;
  g.request = &request;
  auto grant_one = [&](const kv_ask& ask) {
    if (g.preempted.contains(ask.id)) return kv_granted{ask.id, 0, 0, {}};
    kv_granted r = ask.is_admission ? grant_admission(ask) : grant_running(ask, g);
    if (r.num_tokens > 0) g.granted.insert(ask.id);
    return r;
  };
  for (const auto& ask : request.asks) g.out.grants.push_back(grant_one(ask));
  if (g.granted.empty() && request.fallback) {
    g.out.is_fallback_used = true;
    g.out.grants.push_back(grant_one(*request.fallback));
  }
  g.out.snapshot = snapshot();
  return std::move(g.out);
}

int kv_manager::num_new_blocks(seq_id id, int num_tokens) const {
  return std::max(0, pool_.num_blocks_for_tokens(num_tokens) - static_cast<int>(block_table(id).size()));
}

kv_granted kv_manager::grant_running(const kv_ask& ask, grant_state& g) {
  const int end = ask.num_computed_tokens + ask.num_tokens;
  while (num_new_blocks(ask.id, end) > pool_.num_free_blocks() && try_preempt_victim(ask.id, g)) {
  }
  int n = ask.num_tokens;
  if (num_new_blocks(ask.id, end) > pool_.num_free_blocks()) {
    const int num_held = static_cast<int>(block_table(ask.id).size());
    n = (num_held + pool_.num_free_blocks()) * pool_.block_size() - ask.num_computed_tokens;
    if (n <= 0) {
      // Nobody left to make room for it: it recomputes later, as the latest victim.
      release(ask.id);
      g.preempted.insert(ask.id);
      g.out.preempted.push_back(ask.id);
      return kv_granted{ask.id, 0, 0, {}};
    }
  }
  auto& table = tables_[ask.id];
  // Cannot fail: the loop above made sure the blocks are free.
  (void)pool_.try_allocate(num_new_blocks(ask.id, ask.num_computed_tokens + n), table);
  return answer(ask.id, ask.num_computed_tokens, n);
}

kv_granted kv_manager::grant_admission(const kv_ask& ask) {
  int n = std::min(ask.num_tokens, ask.num_total_tokens);
  if (pool_.num_blocks_for_tokens(n) > pool_.num_free_blocks())
    n = pool_.num_free_blocks() * pool_.block_size();
  if (n <= 0) return kv_granted{ask.id, 0, 0, {}};
  auto& table = tables_[ask.id];
  (void)pool_.try_allocate(pool_.num_blocks_for_tokens(n), table);
  return answer(ask.id, 0, n);
}

bool kv_manager::try_preempt_victim(seq_id requester, grant_state& g) {
  const auto& victims = g.request->victims;
  while (g.next_victim < victims.size()) {
    const seq_id id = victims[g.next_victim++].id;
    // Skipped victims never qualify later in this grant: the requester ends granted
    // or preempted, granted ones stay granted.
    if (id == requester || g.granted.contains(id) || !has_table(id)) continue;
    release(id);
    g.preempted.insert(id);
    g.out.preempted.push_back(id);
    return true;
  }
  return false;
}

void kv_manager::release(seq_id id) {
  auto it = tables_.find(id);
  if (it == tables_.end()) return;
  for (auto b = it->second.rbegin(); b != it->second.rend(); ++b) pool_.release(*b);
  tables_.erase(it);
}

kv_granted kv_manager::answer(seq_id id, int num_computed, int num_tokens) const {
  auto table = block_table(id);
  return kv_granted{id, num_tokens, num_computed, {table.begin(), table.end()}};
}

result<void> kv_manager::check_invariants() const {
  if (auto ok = pool_.check_invariants(); !ok) return ok;
  std::vector<int> counted(static_cast<std::size_t>(pool_.num_blocks()), 0);
  for (const auto& [id, table] : tables_) {
    if (table.empty()) return make_error(errc::internal, seq_name(id) + " holds an empty table");
    for (block_id b : table) {
      if (b < 0 || b >= pool_.num_blocks())
        return make_error(errc::internal, seq_name(id) + " holds invalid block " + std::to_string(b));
      ++counted[static_cast<std::size_t>(b)];
    }
  }
  for (block_id b = 0; b < pool_.num_blocks(); ++b) {
    if (counted[static_cast<std::size_t>(b)] != pool_.ref_count(b))
      return make_error(errc::internal, "block " + std::to_string(b) + ": ref count " +
                                            std::to_string(pool_.ref_count(b)) + " but held by " +
                                            std::to_string(counted[static_cast<std::size_t>(b)]) + " tables");
  }
  return {};
}

}  // namespace inflight

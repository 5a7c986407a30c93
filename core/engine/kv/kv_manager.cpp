#include "core/engine/kv/kv_manager.hpp"

#include <algorithm>
#include <string>

namespace inflight {
namespace {

std::string seq_name(seq_id id) { return "sequence " + std::to_string(id); }

}  // namespace

result<kv_manager> kv_manager::try_create(int num_blocks, int block_size, int num_draft_blocks) {
  auto pool = block_pool::try_create(num_blocks, block_size);
  if (!pool) return std::unexpected(pool.error());
  kv_manager out(std::move(*pool));
  if (num_draft_blocks > 0) {
    auto draft = try_create(num_draft_blocks, block_size);
    if (!draft) return make_error(draft.error().code, "the draft model's KV space: " + draft.error().message);
    out.draft_ = std::make_unique<kv_manager>(std::move(*draft));
  }
  return out;
}

kv_snapshot kv_manager::snapshot() const {
  kv_snapshot s;
  s.num_blocks = pool_.num_blocks();
  s.block_size = pool_.block_size();
  s.num_free_blocks = pool_.num_free_blocks();
  s.num_cached_blocks = pool_.num_cached_blocks();
  s.num_evictions = pool_.num_evictions();
  for (const auto& [id, seq] : seqs_) {
    if (!seq.table.empty() || seq.hashes.empty()) continue;
    const int num_hits = static_cast<int>(find_cached_prefix(seq, static_cast<int>(seq.hashes.size())).size());
    if (num_hits > 0) s.cached_prefixes.push_back({id, num_hits * pool_.block_size()});
  }
  if (draft_) {
    s.num_draft_blocks = draft_->pool_.num_blocks();
    s.num_free_draft_blocks = draft_->pool_.num_free_blocks();
  }
  return s;
}

bool kv_manager::has_table(seq_id id) const {
  auto it = seqs_.find(id);
  return it != seqs_.end() && !it->second.table.empty();
}

std::span<const block_id> kv_manager::block_table(seq_id id) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return {};
  return it->second.table;
}

int kv_manager::num_sequences() const {
  int n = 0;
  for (const auto& [id, seq] : seqs_) n += seq.table.empty() ? 0 : 1;
  return n;
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
    if (ask.num_draft_tokens < 0 || ask.num_draft_tokens >= ask.num_tokens || (ask.is_admission && ask.num_draft_tokens > 0))
      return make_error(errc::invalid_argument, who + " asks " + std::to_string(ask.num_draft_tokens) +
                                                    " drafted tokens of " + std::to_string(ask.num_tokens));
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
  kv_request draft;
  if (!request.draft.empty()) {
    if (!draft_) return make_error(errc::invalid_argument, "kv request: asks for a draft model's blocks, but there is no draft space");
    draft.releases = request.draft.releases;
    draft.asks = request.draft.asks;
    if (auto ok = draft_->check_request(draft); !ok)
      return make_error(ok.error().code, "draft space: " + ok.error().message);
  }
  kv_grant out = grant(request);
  if (!request.draft.empty()) {
    kv_grant d = draft_->grant(draft);
    out.draft_grants = std::move(d.grants);
    out.draft_preempted = std::move(d.preempted);
    out.snapshot = snapshot();
  }
  return out;
}

kv_grant kv_manager::grant(const kv_request& request) {
  for (const auto& h : request.new_hashes) {
    auto& chain = seqs_[h.id].hashes;
    chain.insert(chain.end(), h.hashes.begin(), h.hashes.end());
  }
  for (const auto& r : request.releases) release(r);
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
  seq_blocks& s = seqs_.at(ask.id);
  cache_computed_blocks(s, ask.num_computed_tokens);
  // Blocks past what it asks for held a refuted draft: they go back first.
  trim_table(s, ask.num_computed_tokens + ask.num_tokens);
  const int end = ask.num_computed_tokens + ask.num_tokens - ask.num_draft_tokens;
  while (num_new_blocks(ask.id, end) > pool_.num_free_blocks() && try_preempt_victim(ask.id, g)) {
  }
  const int room = (static_cast<int>(s.table.size()) + pool_.num_free_blocks()) * pool_.block_size() -
                   ask.num_computed_tokens;
  // The draft takes what room is left: never a preemption.
  int n = std::min(ask.num_tokens, room);
  if (n <= 0) {
    // Nobody left to make room for it: it recomputes later, as the latest victim.
    release({ask.id, ask.num_computed_tokens, false});
    g.preempted.insert(ask.id);
    g.out.preempted.push_back(ask.id);
    return kv_granted{ask.id, 0, 0, {}};
  }
  // Cannot fail: `room` counts free blocks only.
  (void)pool_.try_allocate(num_new_blocks(ask.id, ask.num_computed_tokens + n), s.table);
  return answer(ask.id, ask.num_computed_tokens, n);
}

void kv_manager::trim_table(seq_blocks& s, int num_tokens) {
  const auto keep = static_cast<std::size_t>(pool_.num_blocks_for_tokens(num_tokens));
  while (s.table.size() > keep) {
    pool_.release(s.table.back());
    s.table.pop_back();
  }
  s.num_cached = std::min(s.num_cached, static_cast<int>(s.table.size()));
}

kv_granted kv_manager::grant_admission(const kv_ask& ask) {
  static const seq_blocks no_blocks;
  auto it = seqs_.find(ask.id);
  const seq_blocks& known = it != seqs_.end() ? it->second : no_blocks;
  const int bs = pool_.block_size();
  // The cached prefix: whole blocks, never the last token (its logits are needed).
  const auto hits = find_cached_prefix(known, (ask.num_total_tokens - 1) / bs);
  // Hit blocks in the free queue cost a free block each, like new ones. Use the hit
  // length that reaches furthest into the sequence with the blocks free (ties: the
  // longer hit); a validated admission always reaches as far as it was planned to.
  int best_hits = -1, best_tokens = 0, num_free_hits = 0;
  for (int h = 0; h <= static_cast<int>(hits.size()); ++h) {
    if (h > 0 && pool_.is_free(hits[static_cast<std::size_t>(h - 1)])) ++num_free_hits;
    const int want = std::min(ask.num_tokens, ask.num_total_tokens - h * bs);
    const int n = std::min(want, (pool_.num_free_blocks() - num_free_hits) * bs);
    if (n > 0 && h * bs + n >= best_hits * bs + best_tokens) best_hits = h, best_tokens = n;
  }
  if (best_hits < 0) return kv_granted{ask.id, 0, 0, {}};
  seq_blocks& s = seqs_[ask.id];
  for (int k = 0; k < best_hits; ++k) {  // before allocating: that may evict free hits
    pool_.acquire(hits[static_cast<std::size_t>(k)]);
    s.table.push_back(hits[static_cast<std::size_t>(k)]);
  }
  s.num_cached = best_hits;
  (void)pool_.try_allocate(pool_.num_blocks_for_tokens(best_tokens), s.table);
  return answer(ask.id, best_hits * bs, best_tokens);
}

bool kv_manager::try_preempt_victim(seq_id requester, grant_state& g) {
  const auto& victims = g.request->victims;
  while (g.next_victim < victims.size()) {
    const seq_id id = victims[g.next_victim++].id;
    // Skipped victims never qualify later in this grant: the requester ends granted
    // or preempted, granted ones stay granted.
    if (id == requester || g.granted.contains(id) || !has_table(id)) continue;
    release(victims[g.next_victim - 1]);
    g.preempted.insert(id);
    g.out.preempted.push_back(id);
    return true;
  }
  return false;
}

void kv_manager::cache_computed_blocks(seq_blocks& s, int num_computed_tokens) {
  const int n = std::min({num_computed_tokens / pool_.block_size(), static_cast<int>(s.hashes.size()),
                          static_cast<int>(s.table.size())});
  // A block whose hash another block holds already (both computed in one step) stays
  // unhashed: lookups find the other one.
  for (int k = s.num_cached; k < n; ++k)
    pool_.try_cache(s.table[static_cast<std::size_t>(k)], s.hashes[static_cast<std::size_t>(k)]);
  s.num_cached = std::max(s.num_cached, n);
}

std::vector<block_id> kv_manager::find_cached_prefix(const seq_blocks& s, int max_blocks) const {
  std::vector<block_id> hits;
  const int n = std::min(max_blocks, static_cast<int>(s.hashes.size()));
  for (int k = 0; k < n; ++k) {
    auto b = pool_.find_cached(s.hashes[static_cast<std::size_t>(k)]);
    if (!b) break;
    hits.push_back(*b);
  }
  return hits;
}

void kv_manager::release(const kv_release& r) {
  auto it = seqs_.find(r.id);
  if (it == seqs_.end()) return;
  seq_blocks& s = it->second;
  cache_computed_blocks(s, r.num_computed_tokens);
  // Tail first: within a request the last blocks are evicted first.
  for (auto b = s.table.rbegin(); b != s.table.rend(); ++b) pool_.release(*b);
  s.table.clear();
  s.num_cached = 0;
  if (r.is_finished) seqs_.erase(it);
}

kv_granted kv_manager::answer(seq_id id, int num_computed, int num_tokens) const {
  auto table = block_table(id);
  return kv_granted{id, num_tokens, num_computed, {table.begin(), table.end()}};
}

result<void> kv_manager::check_invariants() const {
  if (auto ok = pool_.check_invariants(); !ok) return ok;
  if (draft_)
    if (auto ok = draft_->check_invariants(); !ok) return make_error(ok.error().code, "draft space: " + ok.error().message);
  std::vector<int> counted(static_cast<std::size_t>(pool_.num_blocks()), 0);
  for (const auto& [id, seq] : seqs_) {
    if (seq.num_cached > static_cast<int>(seq.table.size()))
      return make_error(errc::internal, seq_name(id) + " counts more cached blocks than it holds");
    for (block_id b : seq.table) {
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
  // Only cached blocks are shared, and every holder has them among its computed,
  // cached leading blocks: nobody writes into a block someone else reads.
  for (const auto& [id, seq] : seqs_) {
    for (std::size_t k = 0; k < seq.table.size(); ++k) {
      const block_id b = seq.table[k];
      if (pool_.ref_count(b) > 1 && (pool_.hash_of(b) == nullptr || static_cast<int>(k) >= seq.num_cached))
        return make_error(errc::internal, seq_name(id) + " shares block " + std::to_string(b) + " at position " +
                                              std::to_string(k) + ", which is not one of its cached blocks");
    }
  }
  return {};
}

}  // namespace inflight

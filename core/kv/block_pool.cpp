#include "core/kv/block_pool.hpp"

#include <algorithm>
#include <string>
#include <unordered_set>

namespace inflight {

block_pool::block_pool(int num_blocks, int block_size)
    : block_size_(block_size), ref_counts_(static_cast<std::size_t>(num_blocks), 0) {
  for (block_id b = 0; b < num_blocks; ++b) free_list_.push_back(b);
}

result<block_pool> block_pool::try_create(int num_blocks, int block_size) {
  if (num_blocks <= 0)
    return make_error(errc::invalid_argument,
                      "KV block pool needs at least one block, got " + std::to_string(num_blocks));
  if (block_size <= 0)
    return make_error(errc::invalid_argument,
                      "KV block size must be positive, got " + std::to_string(block_size));
  return block_pool(num_blocks, block_size);
}

double block_pool::usage() const {
  return static_cast<double>(num_used_blocks()) / static_cast<double>(num_blocks());
}

int block_pool::num_blocks_for_tokens(int num_tokens) const {
  if (num_tokens <= 0) return 0;
  return (num_tokens + block_size_ - 1) / block_size_;
}

int block_pool::num_new_blocks_needed(seq_id id, int num_tokens) const {
  return std::max(0, num_blocks_for_tokens(num_tokens) - num_blocks_held(id));
}

result<void> block_pool::try_reserve(std::span<const reservation> reservations) {
  std::unordered_set<seq_id> seen;
  int num_needed = 0;
  for (const auto& r : reservations) {
    if (r.num_tokens < 0)
      return make_error(errc::invalid_argument, "reservation for sequence " + std::to_string(r.id) +
                                                    " has a negative token count");
    if (!seen.insert(r.id).second)
      return make_error(errc::invalid_argument,
                        "sequence " + std::to_string(r.id) + " appears twice in one reservation");
    num_needed += num_new_blocks_needed(r.id, r.num_tokens);
  }
  if (num_needed > num_free_blocks())
    return make_error(errc::out_of_memory, "KV cache full: step needs " + std::to_string(num_needed) +
                                               " new blocks, " + std::to_string(num_free_blocks()) +
                                               " free");
  for (const auto& r : reservations) {
    int n = num_new_blocks_needed(r.id, r.num_tokens);
    auto& table = tables_[r.id];
    for (int i = 0; i < n; ++i) {
      block_id b = free_list_.front();
      free_list_.pop_front();
      ref_counts_[static_cast<std::size_t>(b)] = 1;
      table.push_back(b);
    }
  }
  return {};
}

result<void> block_pool::try_fork(seq_id parent, seq_id child) {
  auto it = tables_.find(parent);
  if (it == tables_.end())
    return make_error(errc::not_found, "cannot fork sequence " + std::to_string(parent) +
                                           ": it holds no blocks");
  if (tables_.contains(child))
    return make_error(errc::invalid_argument,
                      "cannot fork into sequence " + std::to_string(child) + ": it already has blocks");
  std::vector<block_id> copy = it->second;
  for (block_id b : copy) ++ref_counts_[static_cast<std::size_t>(b)];
  tables_.emplace(child, std::move(copy));
  return {};
}

void block_pool::release(seq_id id) {
  auto it = tables_.find(id);
  if (it == tables_.end()) return;
  for (auto b = it->second.rbegin(); b != it->second.rend(); ++b) {
    if (--ref_counts_[static_cast<std::size_t>(*b)] == 0) free_list_.push_back(*b);
  }
  tables_.erase(it);
}

void block_pool::release(std::span<const seq_id> ids) {
  for (seq_id id : ids) release(id);
}

std::span<const block_id> block_pool::block_table(seq_id id) const {
  auto it = tables_.find(id);
  if (it == tables_.end()) return {};
  return it->second;
}

int block_pool::ref_count(block_id block) const {
  if (block < 0 || block >= num_blocks()) return 0;
  return ref_counts_[static_cast<std::size_t>(block)];
}

result<void> block_pool::check_invariants() const {
  std::vector<int> counted(ref_counts_.size(), 0);
  for (const auto& [id, table] : tables_) {
    for (block_id b : table) {
      if (b < 0 || b >= num_blocks())
        return make_error(errc::internal, "sequence " + std::to_string(id) + " holds invalid block " +
                                              std::to_string(b));
      ++counted[static_cast<std::size_t>(b)];
    }
  }
  std::vector<int> num_free(ref_counts_.size(), 0);
  for (block_id b : free_list_) ++num_free[static_cast<std::size_t>(b)];
  for (std::size_t b = 0; b < ref_counts_.size(); ++b) {
    std::string where = "block " + std::to_string(b) + ": ";
    if (counted[b] != ref_counts_[b])
      return make_error(errc::internal, where + "ref count " + std::to_string(ref_counts_[b]) +
                                            " but held by " + std::to_string(counted[b]) + " tables");
    int expected_free = ref_counts_[b] == 0 ? 1 : 0;
    if (num_free[b] != expected_free)
      return make_error(errc::internal, where + "on the free list " + std::to_string(num_free[b]) +
                                            " times with ref count " + std::to_string(ref_counts_[b]));
  }
  return {};
}

std::int64_t kv_bytes_per_token(int num_layers, int num_kv_heads, int head_dim, int dtype_bytes) {
  return 2LL * num_layers * num_kv_heads * head_dim * dtype_bytes;
}

result<int> try_num_blocks_for_bytes(std::int64_t num_bytes, std::int64_t bytes_per_token,
                                     int block_size) {
  if (bytes_per_token <= 0 || block_size <= 0)
    return make_error(errc::invalid_argument, "KV sizing needs positive bytes per token and block size");
  std::int64_t bytes_per_block = bytes_per_token * block_size;
  std::int64_t n = num_bytes / bytes_per_block;
  if (n < 1)
    return make_error(errc::out_of_memory, "KV budget of " + std::to_string(num_bytes) +
                                               " bytes holds no block of " +
                                               std::to_string(bytes_per_block) + " bytes");
  if (n > std::int64_t{1} << 30) n = std::int64_t{1} << 30;  // block ids are int32
  return static_cast<int>(n);
}

result<int> try_resolve_num_blocks(const kv_cache_config& config, std::int64_t bytes_per_token) {
  if (config.block_size <= 0)
    return make_error(errc::invalid_argument,
                      "kv block_size must be positive, got " + std::to_string(config.block_size));
  if (config.num_blocks > 0) return config.num_blocks;
  if (config.num_bytes <= 0)
    return make_error(errc::invalid_argument, "KV cache size missing: set a block count or a byte budget");
  return try_num_blocks_for_bytes(config.num_bytes, bytes_per_token, config.block_size);
}

}  // namespace inflight

#include "core/engine/kv/block_pool.hpp"

#include <string>

namespace inflight {

block_pool::block_pool(int num_blocks, int block_size)
    : block_size_(block_size),
      ref_counts_(static_cast<std::size_t>(num_blocks), 0),
      hashes_(static_cast<std::size_t>(num_blocks)),
      prev_(static_cast<std::size_t>(num_blocks), none),
      next_(static_cast<std::size_t>(num_blocks), none) {
  for (block_id b = 0; b < num_blocks; ++b) push_back(b);
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

result<void> block_pool::try_allocate(int n, std::vector<block_id>& out) {
  if (n > num_free_)
    return make_error(errc::out_of_memory, "KV cache full: " + std::to_string(n) + " blocks wanted, " +
                                               std::to_string(num_free_) + " free");
  for (int i = 0; i < n; ++i) {
    block_id b = head_;
    unlink(b);
    auto& hash = hashes_[static_cast<std::size_t>(b)];
    if (hash) {  // evicted: its contents are about to be overwritten
      index_.erase(*hash);
      note_evicted(*hash);
      hash.reset();
      ++num_evictions_;
    }
    ref_counts_[static_cast<std::size_t>(b)] = 1;
    out.push_back(b);
  }
  return {};
}

void block_pool::acquire(block_id block) {
  if (ref_counts_[static_cast<std::size_t>(block)]++ == 0) unlink(block);
}

void block_pool::release(block_id block) {
  if (--ref_counts_[static_cast<std::size_t>(block)] > 0) return;
  if (hashes_[static_cast<std::size_t>(block)]) push_back(block);
  else push_front(block);
}

std::optional<block_id> block_pool::find_cached(const block_hash& hash) const {
  auto it = index_.find(hash);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

bool block_pool::try_cache(block_id block, const block_hash& hash) {
  auto& slot = hashes_[static_cast<std::size_t>(block)];
  if (slot || ref_counts_[static_cast<std::size_t>(block)] == 0) return false;
  if (!index_.emplace(hash, block).second) return false;
  slot = hash;
  note_cached(hash);
  return true;
}

void block_pool::note_cached(const block_hash& hash) {
  if (pending_evicted_.erase(hash) == 0) pending_added_.insert(hash);
}

void block_pool::note_evicted(const block_hash& hash) {
  if (pending_added_.erase(hash) == 0) pending_evicted_.insert(hash);
}

cache_delta block_pool::take_cache_delta() {
  cache_delta d;
  d.added.assign(pending_added_.begin(), pending_added_.end());
  d.evicted.assign(pending_evicted_.begin(), pending_evicted_.end());
  pending_added_.clear();
  pending_evicted_.clear();
  return d;
}

std::vector<block_hash> block_pool::cached_hashes() const {
  std::vector<block_hash> out;
  out.reserve(index_.size());
  for (const auto& [hash, block] : index_) out.push_back(hash);
  return out;
}

const block_hash* block_pool::hash_of(block_id block) const {
  if (block < 0 || block >= num_blocks()) return nullptr;
  const auto& slot = hashes_[static_cast<std::size_t>(block)];
  return slot ? &*slot : nullptr;
}

int block_pool::ref_count(block_id block) const {
  if (block < 0 || block >= num_blocks()) return 0;
  return ref_counts_[static_cast<std::size_t>(block)];
}

std::vector<block_id> block_pool::free_blocks() const {
  std::vector<block_id> out;
  for (block_id b = head_; b != none; b = next_[static_cast<std::size_t>(b)]) out.push_back(b);
  return out;
}

void block_pool::unlink(block_id block) {
  auto i = static_cast<std::size_t>(block);
  block_id p = prev_[i], n = next_[i];
  (p == none ? head_ : next_[static_cast<std::size_t>(p)]) = n;
  (n == none ? tail_ : prev_[static_cast<std::size_t>(n)]) = p;
  prev_[i] = next_[i] = none;
  --num_free_;
}

void block_pool::push_front(block_id block) {
  auto i = static_cast<std::size_t>(block);
  prev_[i] = none;
  next_[i] = head_;
  (head_ == none ? tail_ : prev_[static_cast<std::size_t>(head_)]) = block;
  head_ = block;
  ++num_free_;
}

void block_pool::push_back(block_id block) {
  auto i = static_cast<std::size_t>(block);
  next_[i] = none;
  prev_[i] = tail_;
  (tail_ == none ? head_ : next_[static_cast<std::size_t>(tail_)]) = block;
  tail_ = block;
  ++num_free_;
}

result<void> block_pool::check_invariants() const {
  std::vector<int> seen(ref_counts_.size(), 0);
  int count = 0;
  block_id prev = none;
  for (block_id b = head_; b != none; b = next_[static_cast<std::size_t>(b)]) {
    if (b < 0 || b >= num_blocks() || ++seen[static_cast<std::size_t>(b)] > 1 || ++count > num_blocks())
      return make_error(errc::internal, "free queue is corrupt at block " + std::to_string(b));
    if (prev_[static_cast<std::size_t>(b)] != prev)
      return make_error(errc::internal, "free queue back link of block " + std::to_string(b) + " is wrong");
    prev = b;
  }
  if (prev != tail_ || count != num_free_)
    return make_error(errc::internal, "free queue holds " + std::to_string(count) + " blocks, counted " +
                                          std::to_string(num_free_));
  for (std::size_t b = 0; b < ref_counts_.size(); ++b) {
    const int rc = ref_counts_[b];
    if (rc < 0 || (rc == 0) != (seen[b] == 1))
      return make_error(errc::internal, "block " + std::to_string(b) + ": ref count " + std::to_string(rc) +
                                            (seen[b] ? " but in the free queue" : " but not in the free queue"));
  }
  bool is_cached_part = false;  // past the first hashed block of the queue
  for (block_id b = head_; b != none; b = next_[static_cast<std::size_t>(b)]) {
    const bool has_hash = hashes_[static_cast<std::size_t>(b)].has_value();
    if (is_cached_part && !has_hash)
      return make_error(errc::internal, "free block " + std::to_string(b) + " without a hash is behind cached ones");
    is_cached_part = is_cached_part || has_hash;
  }
  return check_index();
}

result<void> block_pool::check_index() const {
  std::size_t num_hashed = 0;
  for (std::size_t b = 0; b < hashes_.size(); ++b) {
    if (!hashes_[b]) continue;
    ++num_hashed;
    auto it = index_.find(*hashes_[b]);
    if (it == index_.end() || it->second != static_cast<block_id>(b))
      return make_error(errc::internal, "block " + std::to_string(b) + " has a hash the index does not map to it");
  }
  if (num_hashed != index_.size())
    return make_error(errc::internal, "the prefix index holds " + std::to_string(index_.size()) + " hashes, " +
                                          std::to_string(num_hashed) + " blocks carry one");
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

#include "core/engine/kv/block_hash.hpp"

#include <xxhash.h>

#include <cstring>

namespace inflight {
namespace {

template <class T>
void put(std::vector<unsigned char>& buf, const T& value) {
  const auto* p = reinterpret_cast<const unsigned char*>(&value);
  buf.insert(buf.end(), p, p + sizeof(T));
}

}  // namespace

block_hash hash_block(const block_hash* parent, std::span<const token_id> tokens, std::string_view extra) {
  // Every field is length-prefixed or fixed-size, so no two inputs share an encoding.
  std::vector<unsigned char> buf;
  buf.reserve(1 + sizeof(block_hash) + 8 + tokens.size_bytes() + extra.size());
  buf.push_back(parent != nullptr ? 1 : 0);
  if (parent != nullptr) {
    put(buf, parent->low);
    put(buf, parent->high);
  }
  put(buf, static_cast<std::uint32_t>(tokens.size()));
  const auto* t = reinterpret_cast<const unsigned char*>(tokens.data());
  buf.insert(buf.end(), t, t + tokens.size_bytes());
  put(buf, static_cast<std::uint32_t>(extra.size()));
  buf.insert(buf.end(), extra.begin(), extra.end());
  const XXH128_hash_t h = XXH3_128bits(buf.data(), buf.size());
  return block_hash{h.low64, h.high64};
}

void extend_block_hashes(std::vector<block_hash>& hashes, std::span<const token_id> tokens, int block_size,
                         std::string_view extra) {
  if (block_size <= 0) return;
  const std::size_t num_full = tokens.size() / static_cast<std::size_t>(block_size);
  for (std::size_t k = hashes.size(); k < num_full; ++k) {
    const auto block = tokens.subspan(k * static_cast<std::size_t>(block_size), static_cast<std::size_t>(block_size));
    const block_hash* parent = k == 0 ? nullptr : &hashes[k - 1];
    const block_hash h = hash_block(parent, block, k == 0 ? extra : std::string_view{});
    hashes.push_back(h);
  }
}

}  // namespace inflight

#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "core/engine/kv/block_pool.hpp"

using namespace inflight;

namespace {

block_pool make_pool(int num_blocks, int block_size = 4) {
  auto pool = block_pool::try_create(num_blocks, block_size);
  REQUIRE(pool.has_value());
  return std::move(*pool);
}

std::vector<block_id> allocate(block_pool& pool, int n) {
  std::vector<block_id> out;
  REQUIRE(pool.try_allocate(n, out).has_value());
  return out;
}

}  // namespace

TEST_CASE("block_pool: blocks are handed out from the front of the free queue", "[core][kv]") {
  auto pool = make_pool(6, 4);
  CHECK(pool.free_blocks() == std::vector<block_id>{0, 1, 2, 3, 4, 5});
  CHECK(allocate(pool, 2) == std::vector<block_id>{0, 1});
  CHECK(allocate(pool, 1) == std::vector<block_id>{2});
  CHECK(pool.num_free_blocks() == 3);
  CHECK(pool.ref_count(0) == 1);
  CHECK(pool.ref_count(5) == 0);
  // a freed block is reused first (its memory is the most recently touched)
  pool.release(1);
  CHECK(pool.free_blocks() == std::vector<block_id>{1, 3, 4, 5});
  CHECK(allocate(pool, 2) == std::vector<block_id>{1, 3});
  REQUIRE(pool.check_invariants().has_value());
}

TEST_CASE("block_pool: allocation is all-or-nothing", "[core][kv]") {
  auto pool = make_pool(4, 4);
  allocate(pool, 2);
  std::vector<block_id> out{7};
  auto res = pool.try_allocate(3, out);
  REQUIRE(!res.has_value());
  CHECK(res.error().code == errc::out_of_memory);
  CHECK(res.error().message.find("3 blocks wanted, 2 free") != std::string::npos);
  CHECK(out == std::vector<block_id>{7});  // untouched
  CHECK(pool.num_free_blocks() == 2);
}

TEST_CASE("block_pool: shared blocks and acquire on a free block", "[core][kv]") {
  auto pool = make_pool(5, 4);
  auto a = allocate(pool, 2);  // 0 1
  pool.acquire(a[0]);          // a second holder
  CHECK(pool.ref_count(0) == 2);
  pool.release(0);
  CHECK(pool.ref_count(0) == 1);
  CHECK(!pool.is_free(0));
  pool.release(0);
  CHECK(pool.is_free(0));
  CHECK(pool.free_blocks() == std::vector<block_id>{0, 2, 3, 4});
  // a free block taken out of the middle of the queue
  pool.acquire(3);
  CHECK(pool.ref_count(3) == 1);
  CHECK(pool.free_blocks() == std::vector<block_id>{0, 2, 4});
  CHECK(pool.num_free_blocks() == 3);
  REQUIRE(pool.check_invariants().has_value());
}

TEST_CASE("block_pool: usage ratio and counts", "[core][kv]") {
  auto pool = make_pool(8, 16);
  CHECK(pool.usage() == 0.0);
  CHECK(pool.num_blocks_for_tokens(0) == 0);
  CHECK(pool.num_blocks_for_tokens(1) == 1);
  CHECK(pool.num_blocks_for_tokens(16) == 1);
  CHECK(pool.num_blocks_for_tokens(17) == 2);
  allocate(pool, 3);
  CHECK(pool.usage() == Approx(3.0 / 8.0));
  CHECK(pool.num_used_blocks() == 3);
  CHECK(!block_pool::try_create(0, 16).has_value());
  CHECK(!block_pool::try_create(4, 0).has_value());
}

TEST_CASE("block_pool: byte budget to block count", "[core][kv]") {
  // Llama-2-7B-like: 32 layers, 32 kv heads, head_dim 128, fp16 -> 512 KiB per token
  CHECK(kv_bytes_per_token(32, 32, 128, 2) == 2LL * 32 * 32 * 128 * 2);
  std::int64_t per_token = kv_bytes_per_token(5, 4, 8, 4);  // stories260K in fp32: 1280 bytes
  CHECK(per_token == 1280);
  auto n = try_num_blocks_for_bytes(1 << 20, per_token, 16);  // 1 MiB / 20480 B per block
  REQUIRE(n.has_value());
  CHECK(*n == 51);
  auto none = try_num_blocks_for_bytes(1000, per_token, 16);
  REQUIRE(!none.has_value());
  CHECK(none.error().code == errc::out_of_memory);
  kv_cache_config by_count{.block_size = 16, .num_blocks = 7, .num_bytes = 1 << 30};
  CHECK(try_resolve_num_blocks(by_count, per_token).value() == 7);
  kv_cache_config by_bytes{.block_size = 16, .num_blocks = 0, .num_bytes = 1 << 20};
  CHECK(try_resolve_num_blocks(by_bytes, per_token).value() == 51);
  kv_cache_config missing{};
  CHECK(!try_resolve_num_blocks(missing, per_token).has_value());
}

TEST_CASE("block_pool: random allocate/acquire/release keeps the free queue exact", "[core][kv]") {
  std::mt19937 rng(7);
  auto pool = make_pool(32, 4);
  std::vector<block_id> held;  // one entry per reference
  for (int i = 0; i < 5000; ++i) {
    const int op = std::uniform_int_distribution<int>(0, 3)(rng);
    if (op == 0 || held.empty()) {
      const int n = std::uniform_int_distribution<int>(1, 6)(rng);
      const int before = pool.num_free_blocks();
      std::vector<block_id> out;
      if (pool.try_allocate(n, out).has_value()) held.insert(held.end(), out.begin(), out.end());
      else CHECK(pool.num_free_blocks() == before);
    } else if (op == 1) {
      const block_id b = std::uniform_int_distribution<int>(0, 31)(rng);
      pool.acquire(b);  // shares an in-use block, or takes a free one out of the queue
      held.push_back(b);
    } else {
      const std::size_t k = rng() % held.size();
      pool.release(held[k]);
      held.erase(held.begin() + static_cast<long>(k));
    }
    auto ok = pool.check_invariants();
    INFO((ok ? std::string() : ok.error().message));
    REQUIRE(ok.has_value());
    REQUIRE(pool.num_used_blocks() <= static_cast<int>(held.size()));
  }
  for (block_id b : held) pool.release(b);
  CHECK(pool.num_free_blocks() == 32);
}

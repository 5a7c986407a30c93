#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "core/kv/block_pool.hpp"

using namespace inflight;

namespace {

block_pool make_pool(int num_blocks, int block_size = 4) {
  auto pool = block_pool::try_create(num_blocks, block_size);
  REQUIRE(pool.has_value());
  return std::move(*pool);
}

std::vector<block_id> table_of(const block_pool& pool, seq_id id) {
  auto t = pool.block_table(id);
  return {t.begin(), t.end()};
}

}  // namespace

TEST_CASE("block_pool: exact block ids as sequences grow", "[core][kv]") {
  auto pool = make_pool(10, 4);
  REQUIRE(pool.num_free_blocks() == 10);
  // seq 1: 6 tokens -> 2 blocks; seq 2: 4 tokens -> 1 block; both in one call
  std::vector<reservation> step1{{1, 6}, {2, 4}};
  REQUIRE(pool.try_reserve(step1).has_value());
  CHECK(table_of(pool, 1) == std::vector<block_id>{0, 1});
  CHECK(table_of(pool, 2) == std::vector<block_id>{2});
  // seq 1 grows to 8 tokens: still 2 blocks; seq 2 grows to 5 tokens: a new block
  std::vector<reservation> step2{{1, 8}, {2, 5}};
  REQUIRE(pool.try_reserve(step2).has_value());
  CHECK(table_of(pool, 1) == std::vector<block_id>{0, 1});
  CHECK(table_of(pool, 2) == std::vector<block_id>{2, 3});
  CHECK(pool.num_free_blocks() == 6);
  // a smaller count never shrinks a table
  std::vector<reservation> shrink{{1, 1}};
  REQUIRE(pool.try_reserve(shrink).has_value());
  CHECK(table_of(pool, 1).size() == 2);
}

TEST_CASE("block_pool: free list order (tail block first, reused last-in)", "[core][kv]") {
  auto pool = make_pool(6, 4);
  std::vector<reservation> r{{1, 12}, {2, 4}};
  REQUIRE(pool.try_reserve(r).has_value());  // seq1: 0 1 2, seq2: 3
  CHECK(pool.free_blocks() == std::vector<block_id>{4, 5});
  pool.release(1);
  CHECK(pool.free_blocks() == std::vector<block_id>{4, 5, 2, 1, 0});
  std::vector<reservation> r3{{3, 16}};
  REQUIRE(pool.try_reserve(r3).has_value());
  CHECK(table_of(pool, 3) == std::vector<block_id>{4, 5, 2, 1});
  CHECK(pool.free_blocks() == std::vector<block_id>{0});
  CHECK(!pool.has_table(1));
  REQUIRE(pool.check_invariants().has_value());
}

TEST_CASE("block_pool: reservations are all-or-nothing", "[core][kv]") {
  auto pool = make_pool(4, 4);
  std::vector<reservation> first{{1, 8}};
  REQUIRE(pool.try_reserve(first).has_value());
  std::vector<reservation> too_much{{2, 4}, {3, 8}};  // needs 3, 2 free
  auto res = pool.try_reserve(too_much);
  REQUIRE(!res.has_value());
  CHECK(res.error().code == errc::out_of_memory);
  CHECK(res.error().message.find("needs 3") != std::string::npos);
  CHECK(pool.num_free_blocks() == 2);
  CHECK(!pool.has_table(2));
  CHECK(!pool.has_table(3));
  std::vector<reservation> dup{{4, 1}, {4, 2}};
  CHECK(pool.try_reserve(dup).error().code == errc::invalid_argument);
  std::vector<reservation> negative{{5, -1}};
  CHECK(pool.try_reserve(negative).error().code == errc::invalid_argument);
  CHECK(pool.num_free_blocks() == 2);
}

TEST_CASE("block_pool: ref counts with forks", "[core][kv]") {
  auto pool = make_pool(8, 4);
  std::vector<reservation> r{{1, 8}};
  REQUIRE(pool.try_reserve(r).has_value());
  REQUIRE(pool.try_fork(1, 2).has_value());
  CHECK(pool.ref_count(0) == 2);
  CHECK(pool.ref_count(1) == 2);
  CHECK(table_of(pool, 2) == table_of(pool, 1));
  CHECK(pool.num_free_blocks() == 6);
  CHECK(pool.try_fork(1, 2).error().code == errc::invalid_argument);
  CHECK(pool.try_fork(9, 10).error().code == errc::not_found);
  // the child grows on its own block
  std::vector<reservation> grow{{2, 9}};
  REQUIRE(pool.try_reserve(grow).has_value());
  CHECK(table_of(pool, 2) == std::vector<block_id>{0, 1, 2});
  pool.release(1);
  CHECK(pool.ref_count(0) == 1);
  CHECK(pool.num_free_blocks() == 5);  // shared blocks stay with the child
  pool.release(2);
  CHECK(pool.num_free_blocks() == 8);
  CHECK(pool.ref_count(0) == 0);
  REQUIRE(pool.check_invariants().has_value());
}

TEST_CASE("block_pool: usage ratio and counts", "[core][kv]") {
  auto pool = make_pool(8, 16);
  CHECK(pool.usage() == 0.0);
  CHECK(pool.num_blocks_for_tokens(0) == 0);
  CHECK(pool.num_blocks_for_tokens(1) == 1);
  CHECK(pool.num_blocks_for_tokens(16) == 1);
  CHECK(pool.num_blocks_for_tokens(17) == 2);
  std::vector<reservation> r{{1, 33}};  // 3 blocks
  REQUIRE(pool.try_reserve(r).has_value());
  CHECK(pool.usage() == Approx(3.0 / 8.0));
  CHECK(pool.num_new_blocks_needed(1, 48) == 0);
  CHECK(pool.num_new_blocks_needed(1, 49) == 1);
  CHECK(pool.num_new_blocks_needed(7, 49) == 4);
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

TEST_CASE("block_pool: random reserve/fork/release keeps ref counts balanced", "[core][kv]") {
  std::mt19937 rng(7);
  auto pool = make_pool(32, 4);
  std::vector<seq_id> live;
  seq_id next = 1;
  for (int i = 0; i < 5000; ++i) {
    int op = std::uniform_int_distribution<int>(0, 3)(rng);
    if (op == 0 || live.empty()) {
      std::vector<reservation> r{{next, std::uniform_int_distribution<int>(1, 20)(rng)}};
      if (pool.try_reserve(r).has_value()) live.push_back(next);
      ++next;
    } else if (op == 1) {
      seq_id s = live[rng() % live.size()];
      std::vector<reservation> r{{s, std::uniform_int_distribution<int>(1, 30)(rng)}};
      int before = pool.num_free_blocks();
      if (!pool.try_reserve(r).has_value()) CHECK(pool.num_free_blocks() == before);
    } else if (op == 2) {
      seq_id s = live[rng() % live.size()];
      REQUIRE(pool.try_fork(s, next).has_value());
      live.push_back(next++);
    } else {
      std::size_t k = rng() % live.size();
      pool.release(live[k]);
      live.erase(live.begin() + static_cast<long>(k));
    }
    auto ok = pool.check_invariants();
    INFO((ok ? std::string() : ok.error().message));
    REQUIRE(ok.has_value());
  }
  for (seq_id s : live) pool.release(s);
  CHECK(pool.num_free_blocks() == 32);
  CHECK(pool.num_sequences() == 0);
}

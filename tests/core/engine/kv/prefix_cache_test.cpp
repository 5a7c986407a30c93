// Prefix caching in the KV manager: exact block ids reused and evicted.
#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

#include "core/engine/kv/kv_manager.hpp"
#include "tests/core/engine/kv/kv_test_util.hpp"

using namespace inflight;

using namespace inflight::kv_test;

namespace {

std::vector<token_id> concat(std::vector<token_id> a, const std::vector<token_id>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<block_hash> chain(const std::vector<token_id>& t, std::string_view salt = {}) {
  std::vector<block_hash> h;
  extend_block_hashes(h, t, bs, salt);
  return h;
}

/// Hashes for a new sequence, then its admission.
kv_request arrive(seq_id id, const std::vector<token_id>& prompt, int num_tokens, std::string_view salt = {}) {
  kv_request r;
  r.new_hashes.push_back({id, chain(prompt, salt)});
  r.asks.push_back(kv_ask{id, num_tokens, 0, static_cast<int>(prompt.size()), true});
  return r;
}

kv_grant grant(kv_manager& kv, const kv_request& request) {
  auto g = kv.try_grant(request);
  INFO((g ? std::string() : g.error().message));
  REQUIRE(g.has_value());
  auto ok = kv.check_invariants();
  INFO((ok ? std::string() : ok.error().message));
  REQUIRE(ok.has_value());
  return std::move(*g);
}

kv_request finish(seq_id id, int num_computed) { return kv_request{.releases = {{id, num_computed, true}}}; }

}  // namespace

TEST_CASE("block hashes: a chain over full blocks, salted at the root", "[core][kv][prefix]") {
  const auto a = tokens(1, 10);
  auto h = chain(a);
  REQUIRE(h.size() == 2);  // the partial third block is not hashed
  CHECK(h[0] == hash_block(nullptr, std::span(a).first(4), {}));
  CHECK(h[1] == hash_block(&h[0], std::span(a).subspan(4, 4), {}));
  // equal block contents after a different prefix: a different hash
  const auto b = concat(tokens(50, 4), std::vector<token_id>(a.begin() + 4, a.end()));
  CHECK(chain(b)[1] != h[1]);
  // the salt changes the first block and so every later one
  const auto salted = chain(a, "tenant-a");
  CHECK(salted[0] != h[0]);
  CHECK(salted[1] != h[1]);
  CHECK(chain(a, "tenant-b")[1] != salted[1]);
  CHECK(chain(a, "tenant-a") == salted);
  // extending continues the chain where it stopped
  auto more = h;
  extend_block_hashes(more, concat(a, tokens(90, 6)), bs, {});
  CHECK(more.size() == 4);
  CHECK(std::equal(h.begin(), h.end(), more.begin()));
}

TEST_CASE("prefix cache: a finished request's full blocks are reused, exact ids", "[core][kv][prefix]") {
  auto kv = make_kv(10);
  const auto prefix = tokens(1, 8);  // two full blocks
  const auto a = concat(prefix, tokens(100, 3));
  auto g1 = grant(kv, arrive(1, a, 11));
  CHECK(g1.grants[0].block_table == std::vector<block_id>{0, 1, 2});
  CHECK(g1.grants[0].num_computed_tokens == 0);
  grant(kv, finish(1, 11));  // all 11 computed: blocks 0, 1 full and cached
  CHECK(kv.pool().num_cached_blocks() == 2);
  CHECK(kv.num_free_blocks() == 10);
  // cached blocks wait at the back, the partial block 2 went to the front
  CHECK(kv.pool().free_blocks() == std::vector<block_id>{2, 3, 4, 5, 6, 7, 8, 9, 1, 0});
  const auto b = concat(prefix, tokens(200, 5));
  auto g2 = grant(kv, arrive(2, b, 13));
  CHECK(g2.grants[0].num_computed_tokens == 8);  // starts after the cached prefix
  CHECK(g2.grants[0].num_tokens == 5);           // clipped to what is left
  CHECK(g2.grants[0].block_table == std::vector<block_id>{0, 1, 2, 3});
  CHECK(kv.pool().ref_count(0) == 1);
  CHECK(kv.num_free_blocks() == 6);
  CHECK(g2.snapshot.num_evictions == 0);
}

TEST_CASE("prefix cache: shared blocks in use cost nothing and count references", "[core][kv][prefix]") {
  auto kv = make_kv(8);
  const auto prefix = tokens(1, 8);
  grant(kv, arrive(1, concat(prefix, tokens(100, 2)), 10));  // 0 1 2
  // seq 1 has computed its prompt: its asks carry the count, blocks 0 and 1 get cached
  grant(kv, {.asks = {kv_ask{1, 1, 10, 11, false}}});
  auto g = grant(kv, arrive(2, concat(prefix, tokens(300, 2)), 10));
  CHECK(g.grants[0].block_table == std::vector<block_id>{0, 1, 3});
  CHECK(g.grants[0].num_computed_tokens == 8);
  CHECK(kv.pool().ref_count(0) == 2);
  CHECK(kv.pool().ref_count(1) == 2);
  CHECK(kv.num_free_blocks() == 4);  // only block 3 was taken
  grant(kv, finish(1, 11));
  CHECK(kv.pool().ref_count(0) == 1);  // seq 2 still holds it
  CHECK(!kv.pool().is_free(0));
  grant(kv, finish(2, 10));
  CHECK(kv.num_free_blocks() == 8);
}

TEST_CASE("prefix cache: the hit never covers the last prompt token", "[core][kv][prefix]") {
  auto kv = make_kv(8);
  const auto a = tokens(1, 8);  // exactly two full blocks
  grant(kv, arrive(1, a, 8));
  grant(kv, finish(1, 8));
  auto g = grant(kv, arrive(2, a, 8));
  CHECK(g.grants[0].num_computed_tokens == 4);  // one block: the last token is computed again
  CHECK(g.grants[0].num_tokens == 4);
  CHECK(g.grants[0].block_table.size() == 2);
  CHECK(g.grants[0].block_table[0] == 0);
}

TEST_CASE("prefix cache: LRU eviction, the tail blocks of a request first", "[core][kv][prefix]") {
  auto kv = make_kv(6);
  grant(kv, arrive(1, tokens(1, 8), 8));    // 0 1
  grant(kv, arrive(2, tokens(100, 8), 8));  // 2 3
  grant(kv, finish(1, 8));                  // 1 is the tail: queued before 0
  grant(kv, finish(2, 8));
  CHECK(kv.pool().free_blocks() == std::vector<block_id>{4, 5, 1, 0, 3, 2});
  // a request with nothing cached takes the unhashed blocks, then evicts the oldest
  auto g = grant(kv, arrive(3, tokens(500, 12), 12));
  CHECK(g.grants[0].block_table == std::vector<block_id>{4, 5, 1});
  CHECK(g.snapshot.num_evictions == 1);
  CHECK(kv.pool().hash_of(1) == nullptr);  // evicted: its hash is gone
  CHECK(kv.pool().hash_of(0) != nullptr);
  // seq 1's prompt again: block 0 is still cached, block 1 is not
  auto g4 = grant(kv, arrive(4, concat(tokens(1, 8), tokens(900, 1)), 9));
  CHECK(g4.grants[0].num_computed_tokens == 4);
  CHECK(g4.grants[0].block_table.front() == 0);
}

TEST_CASE("prefix cache: a hit refreshes a block's place in the LRU queue", "[core][kv][prefix]") {
  auto kv = make_kv(6);
  const auto a = tokens(1, 5), b = tokens(100, 5);  // one full block each
  grant(kv, arrive(1, a, 5));  // 0 1
  grant(kv, arrive(2, b, 5));  // 2 3
  grant(kv, finish(1, 5));
  grant(kv, finish(2, 5));
  CHECK(kv.pool().free_blocks() == std::vector<block_id>{3, 1, 4, 5, 0, 2});  // 0 is the LRU cached block
  grant(kv, arrive(3, a, 5));  // hits 0
  grant(kv, finish(3, 5));
  CHECK(kv.pool().free_blocks() == std::vector<block_id>{3, 1, 4, 5, 2, 0});  // now 2 is
  auto g = grant(kv, arrive(4, tokens(500, 20), 20));
  CHECK(g.grants[0].block_table == std::vector<block_id>{3, 1, 4, 5, 2});
  CHECK(kv.pool().hash_of(2) == nullptr);
  CHECK(kv.pool().hash_of(0) != nullptr);
}

TEST_CASE("prefix cache: different salts never share blocks", "[core][kv][prefix]") {
  auto kv = make_kv(8);
  const auto a = concat(tokens(1, 8), tokens(100, 1));
  grant(kv, arrive(1, a, 9, "tenant-a"));
  grant(kv, finish(1, 9));
  CHECK(grant(kv, arrive(2, a, 9, "tenant-b")).grants[0].num_computed_tokens == 0);
  CHECK(grant(kv, arrive(3, a, 9)).grants[0].num_computed_tokens == 0);  // no salt either
  grant(kv, {.releases = {{2, 0, true}, {3, 0, true}}});
  CHECK(grant(kv, arrive(4, a, 9, "tenant-a")).grants[0].num_computed_tokens == 8);
}

TEST_CASE("prefix cache: generated tokens' blocks become cached once computed", "[core][kv][prefix]") {
  auto kv = make_kv(8);
  const auto prompt = tokens(1, 6);
  grant(kv, arrive(1, prompt, 6));
  // decoding: 2 tokens generated and computed (8 tokens = 2 full blocks)
  const auto generated = tokens(40, 2);
  const auto all = concat(prompt, generated);
  auto h = chain(all);
  kv_request step{.new_hashes = {{1, {h[1]}}}, .asks = {kv_ask{1, 1, 7, 8, false}}};
  grant(kv, step);
  CHECK(kv.pool().num_cached_blocks() == 1);  // block 1 is full but its last token not computed
  grant(kv, finish(1, 8));
  CHECK(kv.pool().num_cached_blocks() == 2);
  // a follow-up turn resends prompt + generated + more
  auto g = grant(kv, arrive(2, concat(all, tokens(70, 3)), 11));
  CHECK(g.grants[0].num_computed_tokens == 8);
}

TEST_CASE("prefix cache: a block computed twice at once is cached once", "[core][kv][prefix]") {
  auto kv = make_kv(8);
  const auto a = concat(tokens(1, 4), tokens(10, 2));
  // both admitted in one step: neither finds the other's blocks yet
  kv_request r = arrive(1, a, 6);
  r.new_hashes.push_back({2, chain(a)});
  r.asks.push_back(kv_ask{2, 6, 0, 6, true});
  auto g = grant(kv, r);
  CHECK(g.grants[0].block_table == std::vector<block_id>{0, 1});
  CHECK(g.grants[1].block_table == std::vector<block_id>{2, 3});
  grant(kv, {.asks = {kv_ask{1, 1, 6, 7, false}, kv_ask{2, 1, 6, 7, false}}});
  CHECK(kv.pool().num_cached_blocks() == 1);
  CHECK(kv.pool().hash_of(0) != nullptr);
  CHECK(kv.pool().hash_of(2) == nullptr);  // the duplicate stays plain
  grant(kv, {.releases = {{1, 7, true}, {2, 7, true}}});
  CHECK(kv.pool().free_blocks().front() != 0);  // the cached one waits at the back
  CHECK(kv.pool().free_blocks().back() == 0);
}

TEST_CASE("prefix cache: a preempted sequence finds its own blocks again", "[core][kv][prefix]") {
  auto kv = make_kv(4);
  const auto a = tokens(1, 10);
  grant(kv, arrive(1, a, 10));  // 0 1 2
  grant(kv, arrive(2, tokens(50, 3), 3));  // 3
  // seq 2 needs a block: seq 1 (10 computed) is the victim; its 2 full blocks stay cached
  auto g = grant(kv, {.asks = {kv_ask{2, 2, 3, 5, false}}, .victims = {{1, 10, false}}});
  CHECK(g.preempted == std::vector<seq_id>{1});
  CHECK(g.grants[0].block_table == std::vector<block_id>{3, 2});  // the unhashed partial block
  CHECK(g.snapshot.cached_prefixes.size() == 1);  // waiting seq 1: 8 tokens cached
  CHECK(g.snapshot.cached_prefixes[0].id == 1);
  CHECK(g.snapshot.cached_prefixes[0].num_tokens == 8);
  grant(kv, finish(2, 5));
  auto back = grant(kv, {.asks = {kv_ask{1, 2, 0, 10, true}}});
  CHECK(back.grants[0].num_computed_tokens == 8);
  CHECK(back.grants[0].block_table[0] == 0);
  CHECK(back.grants[0].block_table[1] == 1);
}

TEST_CASE("prefix cache: an admission uses the longest hit that leaves room to compute", "[core][kv][prefix]") {
  auto kv = make_kv(5);
  const auto prefix = tokens(1, 12);  // three full blocks
  grant(kv, arrive(1, concat(prefix, tokens(100, 1)), 13));  // 0 1 2 3
  grant(kv, finish(1, 13));  // 0 1 2 cached, 3 plain
  grant(kv, arrive(2, tokens(500, 12), 12));  // 3 4, then evicts 2
  CHECK(kv.pool().free_blocks() == std::vector<block_id>{1, 0});
  // cached: 0 1 (both free). Both hits would leave no block for the rest; one hit
  // leaves one: it computes 4 tokens after it (no hit would reach only as far).
  auto g = grant(kv, arrive(3, concat(prefix, tokens(200, 8)), 20));
  CHECK(g.grants[0].num_computed_tokens == 4);
  CHECK(g.grants[0].num_tokens == 4);
  CHECK(g.grants[0].block_table == std::vector<block_id>{0, 1});
  CHECK(kv.pool().hash_of(1) == nullptr);  // reused for new contents
}

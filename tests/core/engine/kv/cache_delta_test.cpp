// The KV manager's cache delta: the full-block hashes it cached and evicted since the
// last call, which an engine reports to a router (core/engine/kv/block_pool.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "core/engine/kv/kv_manager.hpp"
#include "tests/core/engine/kv/kv_test_util.hpp"

using namespace inflight;

using namespace inflight::kv_test;

namespace {

std::vector<block_hash> chain(const std::vector<token_id>& t) {
  std::vector<block_hash> h;
  extend_block_hashes(h, t, bs, {});
  return h;
}

kv_request arrive(seq_id id, const std::vector<token_id>& prompt) {
  kv_request r;
  r.new_hashes.push_back({id, chain(prompt)});
  const int n = static_cast<int>(prompt.size());
  r.asks.push_back(kv_ask{id, n, 0, n, true});
  return r;
}

kv_request finish(seq_id id, int num_computed) { return kv_request{.releases = {{id, num_computed, true}}}; }

void grant(kv_manager& kv, const kv_request& request) {
  auto g = kv.try_grant(request);
  INFO((g ? std::string() : g.error().message));
  REQUIRE(g.has_value());
}

using hash_key = std::tuple<std::uint64_t, std::uint64_t>;

std::set<hash_key> keys(const std::vector<block_hash>& hashes) {
  std::set<hash_key> out;
  for (const auto& h : hashes) out.insert({h.low, h.high});
  return out;
}

}  // namespace

TEST_CASE("cache delta: registered blocks are added once, evicted ones reported once", "[core][kv][prefix]") {
  auto kv = make_kv(4);
  CHECK(kv.take_cache_delta().empty());
  const auto a = tokens(1, 8);  // two full blocks
  grant(kv, arrive(1, a));
  CHECK(kv.take_cache_delta().empty());  // allocated, not computed yet
  grant(kv, finish(1, 8));
  auto d1 = kv.take_cache_delta();
  CHECK(keys(d1.added) == keys(chain(a)));
  CHECK(d1.evicted.empty());
  CHECK(kv.take_cache_delta().empty());  // drained: nothing twice

  // 4 new blocks take the 2 free ones, then evict both cached ones
  const auto b = tokens(100, 16);
  grant(kv, arrive(2, b));
  auto d2 = kv.take_cache_delta();
  CHECK(d2.added.empty());
  CHECK(keys(d2.evicted) == keys(chain(a)));
  grant(kv, finish(2, 16));
  auto d3 = kv.take_cache_delta();
  CHECK(keys(d3.added) == keys(chain(b)));
  CHECK(d3.evicted.empty());
  CHECK(keys(kv.cached_hashes()) == keys(chain(b)));
}

TEST_CASE("cache delta: a block cached and evicted between two calls is in neither list", "[core][kv][prefix]") {
  auto kv = make_kv(2);
  const auto a = tokens(1, 8);
  grant(kv, arrive(1, a));
  grant(kv, finish(1, 8));
  grant(kv, arrive(2, tokens(50, 8)));  // evicts both of a's blocks
  auto d = kv.take_cache_delta();
  CHECK(d.added.empty());
  CHECK(d.evicted.empty());
  // and evicted then cached again: no change either
  grant(kv, finish(2, 8));
  (void)kv.take_cache_delta();
  grant(kv, arrive(3, a));  // evicts seq 2's blocks ...
  grant(kv, finish(3, 8));  // ... and caches a's again
  auto d2 = kv.take_cache_delta();
  CHECK(keys(d2.added) == keys(chain(a)));
  CHECK(keys(d2.evicted) == keys(chain(tokens(50, 8))));
}

TEST_CASE("cache delta: randomized, the mirror built from deltas equals the cached set", "[core][kv][prefix]") {
  std::mt19937 rng(7);
  auto kv = make_kv(12);
  std::set<hash_key> mirror;
  seq_id next_id = 1;
  for (int round = 0; round < 300; ++round) {
    // a prompt from a few shared prefixes, so hits, re-caching and evictions all happen
    const int prefix = static_cast<int>(rng() % 5) * 1000;
    const int len = 4 + static_cast<int>(rng() % 20);
    auto prompt = tokens(prefix, std::min(len, 12));
    if (len > 12) {
      auto tail = tokens(static_cast<int>(rng() % 100000), len - 12);
      prompt.insert(prompt.end(), tail.begin(), tail.end());
    }
    const seq_id id = next_id++;
    auto g = kv.try_grant(arrive(id, prompt));
    REQUIRE(g.has_value());
    const auto& granted = g->grants[0];
    grant(kv, finish(id, granted.num_computed_tokens + granted.num_tokens));
    REQUIRE(kv.check_invariants().has_value());
    if (rng() % 3 != 0) continue;  // drain only now and then: deltas span several grants
    auto d = kv.take_cache_delta();
    const auto added = keys(d.added), evicted = keys(d.evicted);
    REQUIRE(added.size() == d.added.size());      // no duplicates
    REQUIRE(evicted.size() == d.evicted.size());
    for (const auto& h : evicted) REQUIRE(mirror.erase(h) == 1);  // only what it had
    for (const auto& h : added) REQUIRE(mirror.insert(h).second);  // only what it lacked
    REQUIRE(mirror == keys(kv.cached_hashes()));
  }
  CHECK(kv.pool().num_evictions() > 0);
}

// The router (core/route) with the shipped routing policies loaded from the plugin
// directory: round_robin cycles over available engines, least_load follows the load
// reports and its own sends, prefix follows the exact block index with SGLang's
// guards, bad answers are replaced and counted, and the plugin loader refuses what it
// should.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/engine/kv/block_hash.hpp"
#include "core/route/router.hpp"

using namespace inflight;

namespace {

constexpr int block_size = 4;

route_policy load(const std::string& name, const route_settings& settings = {}) {
  auto p = route_policy::try_load(INFLIGHT_TEST_PLUGIN_DIR, name, settings);
  INFO((p ? std::string() : p.error().message));
  REQUIRE(p.has_value());
  return std::move(*p);
}

/// The full blocks' hashes of `tokens`, as an engine's KV manager computes them.
std::vector<block_hash> blocks_of(const std::vector<token_id>& tokens, const std::string& salt = "") {
  std::vector<block_hash> hashes;
  extend_block_hashes(hashes, tokens, block_size, salt);
  return hashes;
}

std::vector<token_id> prompt(int first, int n) {
  std::vector<token_id> t;
  for (int i = 0; i < n; ++i) t.push_back(first + i);
  return t;
}

int choose(router& r, const std::vector<token_id>& tokens) {
  auto c = r.choose(blocks_of(tokens), static_cast<int>(tokens.size()));
  REQUIRE(c.has_value());
  return *c;
}

}  // namespace

TEST_CASE("route: round_robin cycles over the available engines", "[core][route]") {
  router r(load("round_robin"), 3, block_size);
  std::vector<int> picks;
  for (int i = 0; i < 6; ++i) picks.push_back(choose(r, prompt(0, 8)));
  CHECK(picks == std::vector<int>{0, 1, 2, 0, 1, 2});
  r.set_available(1, false);
  picks.clear();
  for (int i = 0; i < 4; ++i) picks.push_back(choose(r, prompt(0, 8)));
  CHECK(picks == std::vector<int>{0, 2, 0, 2});
  CHECK(r.num_refused_choices() == 0);
  r.set_available(0, false);
  r.set_available(2, false);
  auto none = r.choose(blocks_of(prompt(0, 8)), 8);
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().code == errc::unavailable);
}

TEST_CASE("route: least_load takes 4 x waiting + running, and counts its own sends", "[core][route]") {
  router r(load("least_load"), 3, block_size);
  r.set_load(0, {2, 0, 10, 10});  // 8
  r.set_load(1, {0, 5, 10, 10});  // 5
  r.set_load(2, {1, 3, 10, 10});  // 7
  CHECK(choose(r, prompt(0, 8)) == 1);  // now 1 has 9 (one more waiting)
  CHECK(choose(r, prompt(0, 8)) == 2);  // 7 < 8 < 9
  CHECK(choose(r, prompt(0, 8)) == 0);  // 8 < 9 < 11
  r.set_load(1, {0, 0, 10, 10});        // a fresh report replaces the counts
  CHECK(choose(r, prompt(0, 8)) == 1);
  CHECK(r.num_routed(1) == 2);
}

TEST_CASE("route: prefix goes where the prompt's leading blocks are cached", "[core][route]") {
  router r(load("prefix"), 3, block_size);
  const auto shared = prompt(100, 16);  // 4 full blocks
  const auto shared_blocks = blocks_of(shared);
  r.add_blocks(2, shared_blocks);
  r.add_blocks(1, std::vector<block_hash>(shared_blocks.begin(), shared_blocks.begin() + 1));
  auto request = shared;
  request.insert(request.end(), {7, 8, 9});
  CHECK(r.num_cached(2, blocks_of(request)) == 4);
  CHECK(r.num_cached(1, blocks_of(request)) == 1);
  CHECK(choose(r, request) == 2);
  CHECK(choose(r, request) == 2);  // the cache still decides at a small load difference
  for (int i = 0; i < 2; ++i) r.release(2, blocks_of(request));  // both finished: no longer pending
  // Another salt: the same tokens are other blocks; nothing cached, least load decides.
  auto salted = r.choose(blocks_of(request, "tenant-b"), static_cast<int>(request.size()));
  REQUIRE(salted.has_value());
  CHECK(*salted == 0);
  // Evicted blocks are gone from the index: only the first block is left on 2, below
  // the cache threshold (1 of 4 < 0.5), so the load decides.
  r.evict_blocks(2, std::vector<block_hash>(shared_blocks.begin() + 1, shared_blocks.end()));
  CHECK(r.num_cached(2, blocks_of(request)) == 1);
  r.set_load(0, {0, 0, 10, 10});
  r.set_load(1, {0, 0, 10, 10});
  r.set_load(2, {0, 9, 10, 10});
  CHECK(choose(r, request) != 2);
  // An engine that goes away forgets its blocks.
  r.add_blocks(2, blocks_of(shared));
  r.set_available(2, false);
  r.set_available(2, true);
  CHECK(r.num_cached(2, blocks_of(request)) == 0);
}

TEST_CASE("route: prefix's imbalance guard sends to the shortest queue", "[core][route]") {
  router r(load("prefix", {{"balance_abs_threshold", "8"}, {"balance_rel_threshold", "1.5"}}), 2, block_size);
  const auto request = prompt(100, 16);
  r.add_blocks(0, blocks_of(request));
  // The guard counts requests (waiting + running), as SGLang's router does.
  r.set_load(0, {5, 3, 10, 10});   // 8 requests: within 8 of engine 1's 0, not imbalanced
  r.set_load(1, {0, 0, 10, 10});
  CHECK(choose(r, request) == 0);
  r.set_load(0, {3, 6, 10, 10});   // 9 > 0 + 8 and 9 > 1.5 x 0: imbalanced
  r.set_load(1, {0, 0, 10, 10});
  CHECK(choose(r, request) == 1);
  // Weighted (4 x waiting + running) 36 against 9 would be imbalanced; 9 requests
  // against 3 are not. (A fresh router: the send above made engine 1 hold the prompt too.)
  router fresh(load("prefix", {{"balance_abs_threshold", "8"}, {"balance_rel_threshold", "1.5"}}), 2, block_size);
  fresh.add_blocks(0, blocks_of(request));
  fresh.set_load(0, {9, 0, 10, 10});
  fresh.set_load(1, {2, 1, 10, 10});
  CHECK(choose(fresh, request) == 0);
}

TEST_CASE("route: policies refuse bad settings, the loader refuses bad names and files", "[core][route]") {
  auto bad = route_policy::try_load(INFLIGHT_TEST_PLUGIN_DIR, "prefix", {{"cache_threshold", "2"}});
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.error().message, Catch::Contains("cache_threshold"));
  auto unknown = route_policy::try_load(INFLIGHT_TEST_PLUGIN_DIR, "prefix", {{"nope", "1"}});
  REQUIRE_FALSE(unknown.has_value());
  CHECK_THAT(unknown.error().message, Catch::Contains("nope"));
  CHECK(route_policy::try_load(INFLIGHT_TEST_PLUGIN_DIR, "../fcfs").error().code == errc::invalid_argument);
  CHECK(route_policy::try_load(INFLIGHT_TEST_PLUGIN_DIR, "missing").error().code == errc::not_found);
  // A scheduling policy is not a routing policy: another file name, never confused.
  CHECK(route_policy::try_load(INFLIGHT_TEST_PLUGIN_DIR, "fcfs").error().code == errc::not_found);
}

namespace {

inflight_route_status bad_create(const inflight_route_setting*, std::size_t, void** s, char*, std::size_t) {
  *s = nullptr;
  return INFLIGHT_ROUTE_OK;
}
void bad_destroy(void*) {}
inflight_route_status out_of_range(void*, const inflight_route_view* view, std::uint32_t* out) {
  *out = static_cast<std::uint32_t>(view->num_engines + 5);
  return INFLIGHT_ROUTE_OK;
}
inflight_route_status always_first(void*, const inflight_route_view*, std::uint32_t* out) {
  *out = 0;
  return INFLIGHT_ROUTE_OK;
}

}  // namespace

TEST_CASE("route: an answer naming no available engine is replaced by the least loaded", "[core][route]") {
  const inflight_route_vtable wild{INFLIGHT_ROUTE_ABI_VERSION, "wild", bad_create, bad_destroy, out_of_range};
  auto p = route_policy::try_from_vtable(&wild);
  REQUIRE(p.has_value());
  router r(std::move(*p), 2, block_size);
  r.set_load(0, {5, 0, 10, 10});
  CHECK(choose(r, prompt(0, 8)) == 1);
  CHECK(r.num_refused_choices() == 1);

  const inflight_route_vtable stubborn{INFLIGHT_ROUTE_ABI_VERSION, "first", bad_create, bad_destroy, always_first};
  auto q = route_policy::try_from_vtable(&stubborn);
  REQUIRE(q.has_value());
  router s(std::move(*q), 2, block_size);
  s.set_available(0, false);
  CHECK(choose(s, prompt(0, 8)) == 1);  // engine 0 is down: never chosen
  CHECK(s.num_refused_choices() == 1);

  const inflight_route_vtable future{INFLIGHT_ROUTE_ABI_VERSION + 1, "future", bad_create, bad_destroy, always_first};
  CHECK(route_policy::try_from_vtable(&future).error().code == errc::unsupported);
}

TEST_CASE("route: no policy, asked alone, names an unavailable engine, even the one holding the prompt",
          "[core][route]") {
  // Engine 0 is down but would win on every count: the whole prompt cached, no load,
  // nothing routed, the lowest index. The router would replace such an answer, so the
  // policies are asked directly here.
  const std::vector<inflight_route_engine> engines = {
      {0, 0, 0, 0, 100, 100, 4, 0},
      {1, 1, 1, 2, 100, 100, 3, 5},
      {2, 1, 0, 1, 100, 100, 0, 5},
  };
  const inflight_route_view view{engines.data(), engines.size(), {16, 4, block_size}};
  for (const char* name : {"round_robin", "least_load", "prefix"}) {
    INFO(name);
    auto p = load(name);
    for (int i = 0; i < 4; ++i) {
      auto index = p.choose(view);
      REQUIRE(index.has_value());
      CHECK((*index == 1 || *index == 2));
    }
  }
  // prefix takes the best match among the available engines: 3 of 4 blocks on engine 1.
  auto prefix = load("prefix");
  CHECK(prefix.choose(view).value() == 1);
  CHECK(load("least_load").choose(view).value() == 2);
}

TEST_CASE("route: engine reports feed the index: deltas, a full report replaces it", "[core][route]") {
  router r(load("prefix"), 2, block_size);
  const auto shared = prompt(100, 16);
  const auto blocks = blocks_of(shared);
  engine_report delta{.added = blocks, .block_size = block_size};
  REQUIRE(r.apply_report(1, delta).has_value());
  CHECK(r.num_cached(1, blocks) == 4);
  CHECK(r.num_indexed_blocks(1) == 4);
  CHECK(choose(r, shared) == 1);
  r.release(1, blocks);  // finished: only the reported blocks remain
  // the engine evicted its last two blocks
  engine_report evicted{.evicted = {blocks[2], blocks[3]}, .block_size = block_size};
  REQUIRE(r.apply_report(1, evicted).has_value());
  CHECK(r.num_cached(1, blocks) == 2);
  // a full report (a reconnect) is the whole cache: what is not in it is forgotten
  engine_report full{.is_full = true, .added = {blocks[0]}, .block_size = block_size};
  REQUIRE(r.apply_report(1, full).has_value());
  CHECK(r.num_indexed_blocks(1) == 1);
  CHECK(r.num_cached(1, blocks) == 1);
  // an engine that goes away loses its entries; it comes back with a full report
  r.set_available(1, false);
  CHECK(r.num_indexed_blocks(1) == 0);
  CHECK(choose(r, shared) == 0);
  r.set_available(1, true);
  REQUIRE(r.apply_report(1, {.is_full = true, .added = blocks, .block_size = block_size}).has_value());
  CHECK(r.num_cached(1, blocks) == 4);
}

TEST_CASE("route: engine reports carry the load least_load follows", "[core][route]") {
  router r(load("least_load"), 2, block_size);
  REQUIRE(r.apply_report(0, {.num_waiting = 3, .num_running = 2, .block_size = block_size}).has_value());
  CHECK(choose(r, prompt(0, 8)) == 1);
  CHECK(choose(r, prompt(0, 8)) == 1);  // its own sends: 4 x 2 = 8 < 14
  REQUIRE(r.apply_report(1, {.num_waiting = 4, .num_running = 4, .block_size = block_size}).has_value());
  CHECK(choose(r, prompt(0, 8)) == 0);  // 14 < 20
}

TEST_CASE("route: a report under another block size is refused and says so", "[core][route]") {
  router r(load("prefix"), 1, block_size);
  const auto blocks = blocks_of(prompt(100, 16));
  auto refused = r.apply_report(0, {.added = blocks, .block_size = 16});
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code == errc::invalid_argument);
  CHECK(refused.error().message.find("16 tokens") != std::string::npos);
  CHECK(refused.error().message.find("blocks of 4") != std::string::npos);
  CHECK(r.num_indexed_blocks(0) == 0);
}

TEST_CASE("route: prompts routed and not finished count as pending blocks of their engine", "[core][route]") {
  router r(load("prefix"), 2, block_size);
  const auto shared = prompt(100, 16);
  const auto blocks = blocks_of(shared);
  const int first = choose(r, shared);  // nothing reported yet: by load
  CHECK(r.num_cached(first, blocks) == 4);  // pending there
  CHECK(r.num_indexed_blocks(first) == 0);  // not reported
  // A burst sharing the prefix follows the first request, not the load.
  for (int i = 0; i < 3; ++i) CHECK(choose(r, shared) == first);
  for (int i = 0; i < 4; ++i) r.release(first, blocks);
  CHECK(r.num_cached(first, blocks) == 0);  // finished, and never reported
  // Released once per routed request: one of two still pending keeps the blocks.
  const int second = choose(r, shared);
  CHECK(choose(r, shared) == second);
  r.release(second, blocks);
  CHECK(r.num_cached(second, blocks) == 4);
  r.release(second, blocks);
  CHECK(r.num_cached(second, blocks) == 0);
}

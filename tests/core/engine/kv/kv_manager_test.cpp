#include <catch2/catch.hpp>

#include <vector>

#include "core/engine/kv/kv_manager.hpp"

using namespace inflight;

namespace {

kv_manager make_kv(int num_blocks, int block_size = 4) {
  auto kv = kv_manager::try_create(num_blocks, block_size);
  REQUIRE(kv.has_value());
  return std::move(*kv);
}

kv_ask admit(seq_id id, int num_tokens, int num_total = 0) {
  return kv_ask{id, num_tokens, 0, num_total > 0 ? num_total : num_tokens, true};
}

kv_ask grow(seq_id id, int num_tokens, int num_computed) {
  return kv_ask{id, num_tokens, num_computed, num_computed + num_tokens, false};
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

std::vector<block_id> table_of(const kv_manager& kv, seq_id id) {
  auto t = kv.block_table(id);
  return {t.begin(), t.end()};
}

}  // namespace

TEST_CASE("kv_manager: exact block ids as sequences are admitted and grow", "[core][kv]") {
  auto kv = make_kv(10, 4);
  // seq 1: 6 tokens -> 2 blocks; seq 2: 4 tokens -> 1 block; one request
  auto g1 = grant(kv, {.asks = {admit(1, 6), admit(2, 4)}});
  REQUIRE(g1.grants.size() == 2);
  CHECK(g1.grants[0].block_table == std::vector<block_id>{0, 1});
  CHECK(g1.grants[0].num_tokens == 6);
  CHECK(g1.grants[0].num_computed_tokens == 0);
  CHECK(g1.grants[1].block_table == std::vector<block_id>{2});
  CHECK(g1.snapshot.num_free_blocks == 7);
  // seq 1 grows to 8 tokens: same 2 blocks; seq 2 to 5 tokens: a new block
  auto g2 = grant(kv, {.asks = {grow(1, 2, 6), grow(2, 1, 4)}});
  CHECK(g2.grants[0].block_table == std::vector<block_id>{0, 1});
  CHECK(g2.grants[1].block_table == std::vector<block_id>{2, 3});
  CHECK(g2.snapshot.num_free_blocks == 6);
  CHECK(kv.num_sequences() == 2);
}

TEST_CASE("kv_manager: releases come first and their blocks are reused", "[core][kv]") {
  auto kv = make_kv(6, 4);
  grant(kv, {.asks = {admit(1, 12), admit(2, 4)}});  // seq1: 0 1 2, seq2: 3
  auto g = grant(kv, {.releases = {{1, 12, true}}, .asks = {admit(3, 16)}});
  // freed blocks go to the front (most recently touched memory first)
  CHECK(g.grants[0].block_table == std::vector<block_id>{0, 1, 2, 4});
  CHECK(!kv.has_table(1));
  CHECK(kv.num_free_blocks() == 1);
  grant(kv, {.releases = {{2, 4, true}, {3, 16, true}, {99, 0, true}}});  // unknown: no-op
  CHECK(kv.num_free_blocks() == 6);
  CHECK(kv.num_sequences() == 0);
}

TEST_CASE("kv_manager: admissions are clipped to the free blocks, never preempt", "[core][kv]") {
  auto kv = make_kv(5, 4);
  grant(kv, {.asks = {admit(1, 12)}});  // 3 blocks, 2 free
  auto g = grant(kv, {.asks = {grow(1, 1, 12), admit(2, 12), admit(3, 4)},
                      .victims = {{1, 12, false}}});
  CHECK(g.grants[0].num_tokens == 1);  // 4th block
  CHECK(g.grants[1].num_tokens == 4);  // the one block left
  CHECK(g.grants[1].block_table == std::vector<block_id>{4});
  CHECK(g.grants[2].num_tokens == 0);
  CHECK(g.preempted.empty());
  CHECK(!kv.has_table(3));
  CHECK(kv.num_free_blocks() == 0);
  // an admission never computes past the sequence's tokens
  auto kv2 = make_kv(8, 4);
  auto g2 = grant(kv2, {.asks = {admit(5, 100, 9)}});
  CHECK(g2.grants[0].num_tokens == 9);
  CHECK(g2.grants[0].block_table.size() == 3);
}

TEST_CASE("kv_manager: a running ask short of blocks preempts victims in order", "[core][kv]") {
  auto kv = make_kv(6, 4);
  grant(kv, {.asks = {admit(1, 8), admit(2, 4), admit(3, 8)}});  // 1: 0 1, 2: 2, 3: 3 4; free 5
  // seq 1 needs 2 more blocks (16 tokens). Victims in order: 1 (itself, skipped), 3, 2.
  auto g = grant(kv, {.asks = {grow(1, 8, 8), grow(2, 1, 4)},
                      .victims = {{1, 8, false}, {3, 8, false}, {2, 4, false}}});
  CHECK(g.preempted == std::vector<seq_id>{3});
  CHECK(g.grants[0].num_tokens == 8);
  // 3's blocks went back to the front, tail first: 3 4 5
  CHECK(g.grants[0].block_table == std::vector<block_id>{0, 1, 3, 4});
  CHECK(g.grants[1].num_tokens == 1);  // 2 still fits in its own block
  CHECK(!kv.has_table(3));
  // none free now. Seq 1 (16 tokens held, 15 computed) asks 2 tokens, needing a 5th
  // block; its only victim is granted already: it gets what its own blocks hold.
  auto g3 = grant(kv, {.asks = {grow(2, 1, 5), grow(1, 2, 15)},
                       .victims = {{2, 5, false}, {1, 15, false}}});
  CHECK(g3.preempted.empty());
  CHECK(g3.grants[0].num_tokens == 1);
  CHECK(g3.grants[1].num_tokens == 1);  // a partial grant
  CHECK(g3.grants[1].block_table.size() == 4);
  CHECK(kv.has_table(2));
}

TEST_CASE("kv_manager: with nobody left to make room a running sequence preempts itself", "[core][kv]") {
  auto kv = make_kv(4, 4);
  grant(kv, {.asks = {admit(1, 8), admit(2, 8)}});  // all 4 blocks
  auto g = grant(kv, {.asks = {grow(1, 1, 8), grow(2, 1, 8)},
                      .victims = {{2, 8, false}, {1, 8, false}}});
  // seq 1 preempts 2 (its blocks free up); then 2's ask finds it preempted
  CHECK(g.preempted == std::vector<seq_id>{2});
  CHECK(g.grants[0].num_tokens == 1);
  CHECK(g.grants[1].num_tokens == 0);
  // a single sequence at the end of its blocks with nobody to preempt: itself
  auto kv2 = make_kv(2, 4);
  grant(kv2, {.asks = {admit(7, 8)}});
  auto g2 = grant(kv2, {.asks = {grow(7, 1, 8)}, .victims = {{7, 8, false}}});
  CHECK(g2.preempted == std::vector<seq_id>{7});
  CHECK(g2.grants[0].num_tokens == 0);
  CHECK(kv2.num_free_blocks() == 2);
}

TEST_CASE("kv_manager: the fallback runs only when no ask got a token", "[core][kv]") {
  auto kv = make_kv(3, 4);
  grant(kv, {.asks = {admit(1, 12)}});  // all blocks
  // an admission with no block: the fallback (the running sequence) runs instead
  auto g = grant(kv, {.asks = {admit(2, 4)}, .victims = {{1, 12, false}}, .fallback = grow(1, 1, 12)});
  CHECK(g.is_fallback_used);
  REQUIRE(g.grants.size() == 2);
  CHECK(g.grants[0].num_tokens == 0);
  CHECK(g.grants[1].id == 1);
  CHECK(g.grants[1].num_tokens == 0);  // it was alone and full: it preempted itself
  CHECK(g.preempted == std::vector<seq_id>{1});
  // no asks at all: the fallback admits the oldest waiting sequence
  auto g2 = grant(kv, {.fallback = admit(2, 4)});
  CHECK(g2.is_fallback_used);
  CHECK(g2.grants[0].num_tokens == 4);
  // an ask that got tokens: no fallback
  auto g3 = grant(kv, {.asks = {grow(2, 1, 4)}, .fallback = admit(3, 4)});
  CHECK(!g3.is_fallback_used);
  CHECK(g3.grants.size() == 1);
  CHECK(!kv.has_table(3));
}

TEST_CASE("kv_manager: malformed requests are refused whole", "[core][kv]") {
  auto kv = make_kv(8, 4);
  grant(kv, {.asks = {admit(1, 4)}});
  const int free_before = kv.num_free_blocks();
  auto check_refused = [&](const kv_request& r, const std::string& part) {
    auto g = kv.try_grant(r);
    REQUIRE(!g.has_value());
    CHECK(g.error().code == errc::invalid_argument);
    CHECK(g.error().message.find(part) != std::string::npos);
    CHECK(kv.num_free_blocks() == free_before);
    CHECK(kv.has_table(1));
  };
  check_refused({.releases = {{1, 4, true}}, .asks = {admit(2, 4), admit(2, 4)}}, "asked twice");
  check_refused({.releases = {{1, 4, true}}, .asks = {admit(2, 0)}}, "asks 0 tokens");
  check_refused({.asks = {admit(1, 4)}}, "already holds blocks");
  check_refused({.asks = {grow(3, 1, 0)}}, "holds no blocks");
  check_refused({.asks = {grow(1, 1, 9)}}, "computed more tokens");
  check_refused({.releases = {{1, 4, true}}, .asks = {grow(1, 1, 4)}}, "holds no blocks");
  // a sequence released and admitted again in one request is fine
  auto g = grant(kv, {.releases = {{1, 4, false}}, .asks = {admit(1, 6)}});
  CHECK(g.grants[0].num_tokens == 6);
}

TEST_CASE("kv_manager: the draft model's space is a second pool with its own tables", "[core][kv][spec]") {
  auto made = kv_manager::try_create(8, 4, 3);
  REQUIRE(made.has_value());
  kv_manager kv = std::move(*made);
  REQUIRE(kv.draft_space() != nullptr);
  CHECK(kv.snapshot().num_draft_blocks == 3);
  CHECK(kv.snapshot().num_free_draft_blocks == 3);

  // The same sequence holds blocks in both spaces; the draft space's are its own ids.
  kv_request r;
  r.asks = {admit(1, 6)};
  r.draft.asks = {admit(1, 5)};
  auto g = grant(kv, r);
  REQUIRE(g.grants.size() == 1);
  REQUIRE(g.draft_grants.size() == 1);
  CHECK(g.draft_grants[0].num_tokens == 5);
  CHECK(g.draft_grants[0].block_table.size() == 2);
  CHECK(g.snapshot.num_free_blocks == 6);
  CHECK(g.snapshot.num_free_draft_blocks == 1);
  CHECK(table_of(*kv.draft_space(), 1) == g.draft_grants[0].block_table);

  // A second sequence finds one free block: it gets 4 of its 7 tokens; the first grows
  // past what is left and loses its draft table (no victims in the draft space).
  kv_request r2;
  r2.draft.asks = {admit(2, 7), grow(1, 4, 8)};
  g = grant(kv, r2);
  REQUIRE(g.draft_grants.size() == 2);
  CHECK(g.draft_grants[0].num_tokens == 4);
  CHECK(g.draft_grants[1].num_tokens == 0);
  CHECK(g.draft_preempted == std::vector<seq_id>{1});
  CHECK(kv.draft_space()->block_table(1).empty());
  CHECK(kv.block_table(1).size() == 2);  // the target's table is untouched
  CHECK(g.snapshot.num_free_draft_blocks == 2);

  // Releases come first: sequence 2's blocks serve sequence 1 again.
  kv_request r3;
  r3.draft.releases = {{2, 0, true}};
  r3.draft.asks = {admit(1, 12)};
  g = grant(kv, r3);
  CHECK(g.draft_grants[0].num_tokens == 12);
  CHECK(g.snapshot.num_free_draft_blocks == 0);

  // A malformed draft ask refuses the whole request before anything changes.
  kv_request bad;
  bad.asks = {grow(1, 1, 6)};
  bad.draft.asks = {admit(1, 3)};  // it holds a draft table already
  auto refused = kv.try_grant(bad);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().message.find("draft space") != std::string::npos);
  CHECK(kv.block_table(1).size() == 2);

  // Without a draft space, draft asks are refused.
  auto plain = make_kv(4);
  kv_request asks_draft;
  asks_draft.draft.asks = {admit(1, 2)};
  CHECK_FALSE(plain.try_grant(asks_draft).has_value());
}

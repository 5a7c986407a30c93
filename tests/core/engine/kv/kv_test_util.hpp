#pragma once
// Helpers of the KV-manager tests: a manager of 4-token blocks, runs of token ids.

#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

#include "core/engine/kv/kv_manager.hpp"

namespace inflight::kv_test {

inline constexpr int bs = 4;

inline kv_manager make_kv(int num_blocks) {
  auto kv = kv_manager::try_create(num_blocks, bs);
  REQUIRE(kv.has_value());
  return std::move(*kv);
}

/// first, first + 1, ..., first + n - 1
inline std::vector<token_id> tokens(int first, int n) {
  std::vector<token_id> t(static_cast<std::size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

}  // namespace inflight::kv_test

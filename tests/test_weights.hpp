#pragma once
/// Test helpers for typed weights: fp32 copies of a matrix and in-place edits.

#include <vector>

#include "core/model/weight_tensor.hpp"

namespace inflight::test {

/// A copy of an fp32 matrix's values (empty for other types).
inline std::vector<float> values_of(const weight_tensor& t) {
  const auto v = t.f32();
  return {v.begin(), v.end()};
}

/// Applies f to every value of an fp32 matrix.
template <class F>
void edit_values(weight_tensor& t, F f) {
  auto v = values_of(t);
  for (auto& x : v) x = f(x);
  t = weight_tensor::from_f32(std::move(v), t.rows(), t.cols());
}

}  // namespace inflight::test

#include "core/model/model_weights.hpp"

#include <algorithm>

namespace inflight {

std::vector<weight_dtype> weight_dtypes_of(const model_weights& weights) {
  std::array<bool, num_weight_dtypes> is_used{};
  const auto mark = [&](const weight_tensor& t) {
    if (!t.empty()) is_used[std::size_t(t.dtype())] = true;
  };
  mark(weights.token_embedding);
  mark(weights.classifier);
  for (const auto& layer : weights.layers) {
    for (const auto* m : matrices_of(layer)) mark(*m);
  }
  std::vector<weight_dtype> used;
  for (int i = 0; i < num_weight_dtypes; ++i) {
    if (is_used[std::size_t(i)]) used.push_back(weight_dtype(i));
  }
  return used;
}

namespace {

result<void> decode_in_place(weight_tensor& t) {
  if (t.empty() || t.dtype() == weight_dtype::f32) return {};
  auto values = try_to_f32(t);
  if (!values) return std::unexpected(values.error());
  t = weight_tensor::from_f32(std::move(*values), t.rows(), t.cols());
  return {};
}

}  // namespace

result<model_weights> try_decode_to_f32(const model_weights& weights) {
  model_weights out = weights;
  const bool is_tied = out.classifier.empty();
  std::vector<weight_tensor*> all{&out.token_embedding, &out.classifier};
  for (auto& layer : out.layers) {
    for (auto* m : matrices_of(layer)) all.push_back(m);
  }
  for (auto* t : all) {
    if (auto ok = decode_in_place(*t); !ok) return std::unexpected(ok.error());
  }
  if (is_tied) out.classifier = weight_tensor{};
  return out;
}

}  // namespace inflight

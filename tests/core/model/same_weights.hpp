#pragma once
// A Catch check that two models hold the same weights: every matrix (type, shape, bytes),
// norm and bias, in the RoPE order as stored. For the loaders' and writers' round trips.

#include <catch2/catch.hpp>

#include "core/model/model_weights.hpp"

namespace inflight::test {

inline void check_same_weights(const model_weights& a, const model_weights& b) {
  CHECK(a.token_embedding == b.token_embedding);
  CHECK(a.classifier == b.classifier);
  CHECK(a.final_norm == b.final_norm);
  REQUIRE(a.layers.size() == b.layers.size());
  for (std::size_t i = 0; i < a.layers.size(); ++i) {
    const auto &x = a.layers[i], &y = b.layers[i];
    for (std::size_t m = 0; m < matrices_of(x).size(); ++m) {
      INFO("layer " << i << " matrix " << m);
      CHECK(*matrices_of(x)[m] == *matrices_of(y)[m]);
    }
    const std::vector<float> layer_weights::*vectors[] = {
        &layer_weights::attn_norm,      &layer_weights::ffn_norm,       &layer_weights::post_attn_norm,
        &layer_weights::post_ffn_norm,  &layer_weights::bq,             &layer_weights::bk,
        &layer_weights::bv,             &layer_weights::q_norm,         &layer_weights::k_norm,
        &layer_weights::shared_expert_gate, &layer_weights::attn_sinks, &layer_weights::bo,
        &layer_weights::router_bias,    &layer_weights::gate_exps_bias, &layer_weights::up_exps_bias,
        &layer_weights::down_exps_bias};
    for (std::size_t v = 0; v < std::size(vectors); ++v) {
      INFO("layer " << i << " vector " << v);
      CHECK(x.*vectors[v] == y.*vectors[v]);
    }
  }
}

}  // namespace inflight::test

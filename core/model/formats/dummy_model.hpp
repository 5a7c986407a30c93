#pragma once
/// Random weights of any shape, for benchmarks and tests.

#include <cstdint>

#include "core/base/error.hpp"
#include "core/model/convert.hpp"
#include "core/model/model_config.hpp"
#include "core/model/model_weights.hpp"

namespace inflight {

/// Standard deviation of the random matrices (the usual Llama initialiser range).
inline constexpr float dummy_weight_std = 0.02f;

/// Weights of `config`'s shape: matrices and biases drawn from N(0, dummy_weight_std),
/// norms (q/k norms included) = 1, a classifier only when the embedding is untied. The same config and seed
/// give the same weights whatever the thread count (own RNG, one stream per tensor
/// chunk; only libm's log/cos could differ between platforms). errc::invalid_argument for an unusable shape,
/// errc::out_of_memory when the weights do not fit. With a recipe, each matrix is
/// converted as soon as it is drawn, so an 8B shape at q4_k_m never holds its f32 whole.
result<model_weights> make_dummy_weights(const model_config& config, std::uint64_t seed,
                                         const quant_recipe* recipe = nullptr);

}  // namespace inflight

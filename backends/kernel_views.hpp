#pragma once
/// Core model types seen as the kernels' raw-pointer views (kernels/cpu/llama.hpp);
/// every backend builds its views here.

#include <vector>

#include "core/model/model_weights.hpp"
#include "kernels/cpu/llama.hpp"

namespace inflight {

/// Kernel shape of a model configuration.
kernels::cpu::llama_shape to_kernel_shape(const model_config& config);

/// One view per layer; absent biases are null. The views point into `weights`.
std::vector<kernels::cpu::llama_layer_view> to_layer_views(const model_weights& weights);

/// The whole model; `layers` (from to_layer_views) must outlive the view.
kernels::cpu::llama_weights_view to_weights_view(const model_weights& weights,
                                                 const std::vector<kernels::cpu::llama_layer_view>& layers);

}  // namespace inflight

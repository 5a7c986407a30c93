#pragma once
/// Creates the backend a deployment names ([engine] backend = "cpu" | "cuda").

#include <memory>

#include "backends/cpu_backend.hpp"
#include "core/config/deployment.hpp"
#include "core/engine/step/backend.hpp"
#include "core/model/model_weights.hpp"

namespace inflight {

result<std::unique_ptr<backend>> make_backend(const engine_settings& settings,
                                              std::shared_ptr<const model_weights> weights);

/// The CPU backend's options a deployment's [engine] gives (threads, pinning, KV type).
cpu_backend_options cpu_options_of(const engine_settings& settings);

/// True when this build has the CUDA backend.
bool has_cuda_backend();

}  // namespace inflight

#pragma once
/// What a benchmark says about where and what it ran: the CPU's model name, the time,
/// the weight and KV types, for its report and the origin of a step profile
/// (core/bench/sim/step_profile.hpp).

#include <string>

#include "core/config/deployment.hpp"
#include "core/model/model_weights.hpp"

namespace inflight::app {

/// The CPU's model name from /proc/cpuinfo ("unknown" when there is none).
std::string cpu_model_name();
/// Now, in UTC, ISO 8601 (2026-11-26T21:53:42Z).
std::string utc_now();
/// The weights' storage types, joined by '+' ("q4_k+q6_k+f32").
std::string weight_dtype_list(const model_weights& weights);
/// The KV cache's element type as the engine resolves engine.kv_dtype = "auto": f32 on
/// the CPU, the model's dtype elsewhere.
std::string kv_dtype_of(const deployment& d);

}  // namespace inflight::app

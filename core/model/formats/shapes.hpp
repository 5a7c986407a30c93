#pragma once
/// The named model shapes of the benchmark workloads (../shared/workloads/README.md),
/// and the decoder families a shape can be drawn as.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"
#include "core/model/model_config.hpp"

namespace inflight {

/// bench-20M, bench-110M (llama2.c layout, 32k vocabulary), llama-3.2-1b, llama-3.1-8b,
/// qwen3-0.6b (the Qwen3-Reranker-0.6B shape).
std::optional<model_config> named_shape(std::string_view name);
std::vector<std::string> shape_names();

/// "llama" (Llama-family decoders as they are) and "qwen3".
std::vector<std::string> family_names();

/// `config` drawn as `family`: "llama" leaves it unchanged; "qwen3" makes it a
/// Qwen3ForCausalLM (per-head q/k RMSNorm, rotate_half RoPE, no attention biases).
/// errc::invalid_argument for an unknown family.
result<model_config> try_as_family(model_config config, std::string_view family);

}  // namespace inflight

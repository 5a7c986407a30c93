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
/// qwen3-0.6b (the Qwen3-Reranker-0.6B shape), llama-2-13b, qwen3-30b-a3b (experts).
std::optional<model_config> named_shape(std::string_view name);
std::vector<std::string> shape_names();

/// Every family of model_family.hpp: llama, qwen2, qwen3, mixtral, qwen2moe, qwen3moe.
std::vector<std::string> family_names();

/// `config` drawn as `family` (model_family.hpp): "llama" leaves a dense shape unchanged;
/// "qwen3" makes it a Qwen3ForCausalLM (per-head q/k RMSNorm, rotate_half RoPE, no
/// attention biases); a mixture family without experts in the shape gets 8 experts of a
/// quarter of its MLP width, 2 per token (qwen2moe: and a shared expert of its width).
/// errc::invalid_argument for an unknown family.
result<model_config> try_as_family(model_config config, std::string_view family);

}  // namespace inflight

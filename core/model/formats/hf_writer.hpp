#pragma once
/// Writes model weights as a Hugging Face model folder (config.json,
/// generation_config.json, model.safetensors) that try_load_hf_model reads back.

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/model/formats/hf_model.hpp"
#include "core/model/formats/safetensors.hpp"
#include "core/model/model_weights.hpp"

namespace inflight {

/// Reorders the rows of a q/k projection ([num_heads * head_dim x num_cols], a bias
/// when num_cols == 1) from interleaved RoPE pairs to rotate_half pairs: within each
/// head, row 2i moves to row i and row 2i+1 to row i + head_dim/2. Since q and k are
/// permuted alike, attention scores do not change.
/// errc::invalid_argument when rows.size() != num_heads * head_dim * num_cols or head_dim is odd.
result<std::vector<float>> permute_for_half_rope(std::span<const float> rows, int num_heads, int head_dim,
                                                 int num_cols);
/// The inverse of permute_for_half_rope (what HF's llama conversion script applies).
result<std::vector<float>> permute_for_interleaved_rope(std::span<const float> rows, int num_heads,
                                                        int head_dim, int num_cols);

/// The same model with rope_style::half: wq/wk (and bq/bk, q/k norms) permuted when it was interleaved.
result<model_weights> to_half_rope(const model_weights& weights);

/// config.json text for `config` (always rope_style::half in HF terms).
std::string hf_config_json(const model_config& config, tensor_dtype dtype, const generation_ids& ids);

/// Writes `weights` into `folder` (created if needed) with tensors stored as `dtype`
/// (F32, BF16 or F16). A "llama2.c" architecture is written as LlamaForCausalLM.
/// An interleaved-RoPE model is permuted so the folder loads with
/// rope_style::half and computes the same outputs. generation_config.json is written
/// when `ids` names any token.
result<void> write_hf_model_folder(const model_weights& weights, const std::filesystem::path& folder,
                                   tensor_dtype dtype = tensor_dtype::f32, const generation_ids& ids = {});

}  // namespace inflight

#pragma once
/// llama2.c checkpoints (`*.bin`, the legacy layout of run.c):
///
///   header: 7 x int32  dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
///           (vocab_size < 0: the classifier is stored separately at the end)
///   fp32:   token_embedding [vocab x dim]
///           rms_att [L x dim], wq [L x dim x dim], wk [L x kv_dim x dim], wv [L x kv_dim x dim],
///           wo [L x dim x dim], rms_ffn [L x dim], w1 [L x hidden x dim], w2 [L x dim x hidden],
///           w3 [L x hidden x dim], rms_final [dim],
///           freq_cis_real, freq_cis_imag [seq_len x head_size/2] (skipped),
///           wcls [vocab x dim] (only when unshared)

#include <cstdint>
#include <filesystem>

#include "core/base/error.hpp"
#include "core/model/model_weights.hpp"

namespace inflight {

/// Loads a llama2.c checkpoint; the file size is checked against the header first.
result<model_weights> load_llama2c(const std::filesystem::path& path);

/// Writes `weights` as a llama2.c checkpoint (interleaved RoPE, dim == heads x head_dim).
result<void> write_llama2c(const model_weights& weights, const std::filesystem::path& path);

/// Expected file size in bytes for a header (without or with a separate classifier).
std::int64_t llama2c_file_size(const model_config& config);

}  // namespace inflight

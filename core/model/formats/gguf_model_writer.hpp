#pragma once
/// Writes model weights and a tokenizer as a GGUF file that try_load_gguf_model and
/// llama.cpp read: the architecture follows from the config (qk_norm: qwen3, attention
/// biases: qwen2, else llama), matrices are written in their own types, and Q/K rows
/// (with their biases and norms) are reordered when the model's RoPE pairing is not the
/// one the architecture implies (llama: interleaved; qwen2, qwen3: half), which leaves
/// the model's outputs unchanged. Llama-3 scaling is written as rope_freqs.weight.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "core/base/error.hpp"
#include "core/model/model_weights.hpp"
#include "core/model/tokenizer/gguf_vocab.hpp"

namespace inflight {

struct gguf_model_options {
  std::string name;              ///< general.name
  std::uint32_t alignment = 32;  ///< a power of two
  /// {arch}.pooling_type, ggml's enum (1 mean, 2 cls, 3 last ...), for an embedding model.
  std::optional<std::uint32_t> pooling_type = std::nullopt;
  /// > 0: written as a split file of parts of at most this many tensors, named as
  /// llama.cpp's gguf-split names them (PATH without .gguf, then -00001-of-0000N.gguf).
  std::size_t split_max_tensors = 0;
};

/// The general.architecture a config is written as; errc::unsupported for a config no
/// GGUF architecture describes (biases and q/k norms together, Llama-3 scaling on Qwen).
result<std::string> try_gguf_architecture_of(const model_config& config);

/// Writes `weights` and `vocab` (its size must equal config.vocab_size) to `path`.
result<void> try_write_gguf_model(const model_weights& weights, const gguf_vocab& vocab,
                                  const std::filesystem::path& path, const gguf_model_options& options = {});

}  // namespace inflight

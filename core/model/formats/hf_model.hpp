#pragma once
/// Loads a Hugging Face model folder: config.json, generation_config.json and the
/// safetensors weights (one file or shards), for every family of model_family.hpp whose
/// folders load (all but gpt-oss). Config parsing is in hf_config.cpp, the tensors in
/// hf_model.cpp.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/types.hpp"
#include "core/model/formats/safetensors.hpp"
#include "core/model/model_config.hpp"
#include "core/model/model_weights.hpp"
#include "core/model/pooling.hpp"

namespace inflight {

/// Default special tokens of a model (generation_config.json, else config.json).
struct generation_ids {
  std::vector<token_id> eos_ids;  ///< any of them ends a sequence
  std::optional<token_id> bos_id;
};

/// A loaded model folder: fp32 weights (rope_style::half), its default special tokens
/// and, for a sentence-transformers folder, how its embeddings are pooled.
struct hf_model {
  model_weights weights;
  std::vector<token_id> eos_ids;
  std::optional<token_id> bos_id;
  model_pooling pooling;  ///< modules.json -> 1_Pooling/config.json (core/model/formats/st_pooling.hpp)
};

/// Parses config.json text; `source` names the file in error messages.
/// errc::unsupported for an unknown architecture, activation or rope scaling type;
/// errc::corrupt_file for missing or ill-typed fields.
result<model_config> try_parse_hf_config(std::string_view json_text, const std::string& source);
/// Reads and parses a config.json file (also used alone for dummy models of that shape).
result<model_config> try_load_hf_config(const std::filesystem::path& config_path);

/// Parses eos_token_id (int, list or null) and bos_token_id from config text.
result<generation_ids> try_parse_generation_ids(std::string_view json_text, const std::string& source,
                                                int vocab_size);

/// Checks a shape is usable: positive sizes, heads divisible by KV heads, even head_dim.
result<void> try_check_shape(const model_config& config);

/// Reads every tensor `config` needs from `store`, checking name, dtype and shape.
/// A missing tensor is errc::not_found; a wrong shape or dtype is errc::corrupt_file /
/// errc::unsupported; each message names the tensor (and the expected shape).
result<model_weights> try_load_hf_weights(const tensor_store& store, const model_config& config);

/// Loads a whole model folder.
result<hf_model> try_load_hf_model(const std::filesystem::path& folder, file_load load = file_load::map);

}  // namespace inflight

#pragma once
/// Which files of a Hub repository a model needs, from the repository's file list alone
/// (no network here): a Hugging Face folder's config, weights and tokenizer files (a PEFT
/// adapter's adapter_config.json and weights alike), or one GGUF file (every part of a
/// split one) picked by name or quantization.

#include <span>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "hub/hub_name.hpp"

namespace inflight::hub {

struct hub_selection {
  std::vector<std::string> files;  ///< paths in the repository to fetch, sorted
  std::string model_file;          ///< what model.path names inside the snapshot; empty = the folder itself
};

/// The quantization tried when a repository of GGUF files alone is named without one.
inline constexpr const char* default_gguf_tag = "Q4_K_M";

/// The files `name` needs out of `repo_files` (every path in the repository); an error
/// says what the repository has instead when nothing fits.
result<hub_selection> try_select_files(const hub_name& name, std::span<const std::string> repo_files);

/// Whether `file` is one of the files of a Hugging Face folder that the loader reads
/// (config, safetensors, tokenizer, chat template, pooling files).
bool is_folder_file(const std::string& file);

}  // namespace inflight::hub

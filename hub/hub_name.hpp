#pragma once
/// Models named by their place on the Hugging Face Hub instead of a local path:
///
///   hf:ORG/REPO                  a Hugging Face folder (config, safetensors, tokenizer files);
///                                a repository of GGUF files only: its Q4_K_M file
///   hf:ORG/REPO:Q4_K_M           the GGUF file of that quantization (llama.cpp's -hf)
///   hf:ORG/REPO/PATH/FILE.gguf   one file of the repository
///   ...@REVISION                 a branch, tag or commit (default: main)

#include <string>
#include <string_view>

#include "core/base/error.hpp"

namespace inflight::hub {

struct hub_name {
  std::string repo;                ///< ORG/REPO
  std::string file;                ///< a path in the repository; empty = chosen from its files
  std::string tag;                 ///< a GGUF quantization (Q4_K_M, Q8_0, ...); empty = none given
  std::string revision = "main";
};

/// Whether `spec` names a model on the Hub (starts with "hf:").
bool is_hub_name(std::string_view spec);

/// Parses "hf:ORG/REPO[/FILE][:TAG][@REVISION]"; a malformed name is an error saying which part.
result<hub_name> try_parse_hub_name(std::string_view spec);

/// "ORG/REPO", "ORG/REPO:TAG" or "ORG/REPO/FILE": the served model name a hub name gives.
std::string served_name_of(const hub_name& name);

/// "hf:ORG/REPO...@REVISION" as the user wrote it (for messages).
std::string to_string(const hub_name& name);

/// A revision that is a commit hash (40 lowercase hex digits): it never moves.
bool is_commit_hash(std::string_view revision);

}  // namespace inflight::hub

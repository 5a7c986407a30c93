#pragma once
/// A small file's whole text (config.json, tokenizer and module configs).

#include <filesystem>
#include <string>

#include "core/base/error.hpp"

namespace inflight {

/// The whole text of a file (errc::not_found when it does not exist).
result<std::string> read_text_file(const std::filesystem::path& path);

}  // namespace inflight

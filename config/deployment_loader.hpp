#pragma once
/// Turns deployment TOML (and `--set key=value` overrides) into core's `deployment`.
/// Every key is validated; an unknown key is an error so that typos never pass.

#include <filesystem>
#include <string>
#include <vector>

#include "core/config/deployment.hpp"
#include "core/error.hpp"

namespace inflight::config {

/// Parses a TOML document (the text of a file) on top of the defaults.
result<deployment> parse_deployment(const std::string& toml_text, const std::string& source_name = "config");

/// Reads and parses a TOML file; relative paths in [model] and [scheduler] resolve
/// against the file's folder.
result<deployment> load_deployment(const std::filesystem::path& path);

/// Applies one `key=value` override (`engine.max_num_seqs=64`, `model.path="x.bin"`).
result<void> apply_override(deployment& d, const std::string& assignment);

/// Parses sizes such as 1048576, "256MiB", "1.5GiB", "512MB".
result<std::int64_t> parse_bytes(const std::string& text);

/// The keys a deployment file may hold, each with its expected type.
std::vector<std::string> known_keys();

}  // namespace inflight::config

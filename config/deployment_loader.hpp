#pragma once
/// Turns deployment TOML (and `--set key=value` overrides) into core's `deployment`.
/// Every key is validated; an unknown key is an error so that typos never pass.

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "config/units.hpp"
#include "core/config/deployment.hpp"

namespace inflight::config {

/// Parses a TOML document (the text of a file) on top of the defaults, then validates it.
result<deployment> parse_deployment(const std::string& toml_text, const std::string& source_name = "config");

/// The deployment a command runs with: the defaults, then the TOML file at `path` (none
/// when empty; relative paths in [model] and [scheduler] resolve against its folder),
/// then every `--set` override in order, then one validation of the result, so the
/// order of the overrides never matters.
result<deployment> load_deployment(const std::filesystem::path& path, std::span<const std::string> overrides = {});

/// Applies one `key=value` override (`engine.max_num_seqs=64`, `model.path="x.bin"`).
/// Checks the key and the value's type and range; rules between keys are checked by
/// validate_deployment once every override is in.
result<void> apply_override(deployment& d, const std::string& assignment);

/// The rules between keys (model.dummy.num_heads a multiple of num_kv_heads, ...);
/// each error names the keys.
result<void> validate_deployment(const deployment& d);

/// The keys a deployment file may hold, each with its expected type.
std::vector<std::string> known_keys();

}  // namespace inflight::config

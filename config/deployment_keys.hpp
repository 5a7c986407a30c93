#pragma once
/// The keys a deployment may set: for each, the value it expects and where it goes in
/// core's `deployment` (the one table deployment_loader applies documents and `--set`
/// overrides with; known_keys() lists it).

#include <toml++/toml.h>

#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/config/deployment.hpp"

namespace inflight::config {

/// Sets `key` ("engine.max_num_seqs") of `d` from a TOML value, checking its type and
/// range; an unknown key, or a value of the wrong type or range, is an error naming it.
result<void> apply_key(deployment& d, const std::string& key, const toml::node& value);

/// Every key with what it expects: "engine.max_num_seqs (an integer in [1, 65536])".
std::vector<std::string> key_descriptions();

}  // namespace inflight::config

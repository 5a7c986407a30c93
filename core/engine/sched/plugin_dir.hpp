#pragma once
/// Where the scheduling-policy plugins are. In order:
///   1. scheduler.plugin_dir, when set;
///   2. $INFLIGHT_PLUGIN_DIR, when set;
///   3. next to the running binary (/proc/self/exe), so that an installed tree can be
///      moved and a build tree finds its own plugins:
///        <exe dir>/../lib/inflight/plugins   an installed tree (bin/inflight)
///        <exe dir>/../plugins                a build tree (build/bin/inflight)

#include <filesystem>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"

namespace inflight {

/// The directories looked at next to `executable`, in order.
std::vector<std::filesystem::path> plugin_dirs_near(const std::filesystem::path& executable);

/// The plugin directory for a configured value (may be empty), the environment's
/// value (may be null or empty) and the running binary's path. A configured or
/// environment directory is taken as given (a missing one fails later, naming the
/// file); next to the binary, the first existing candidate wins, and none is an error
/// that names the candidates and both overrides.
result<std::filesystem::path> try_resolve_plugin_dir(std::string_view configured, const char* env_value,
                                                     const std::filesystem::path& executable);

/// The running binary's own path (/proc/self/exe), symlinks resolved.
result<std::filesystem::path> try_current_executable();

}  // namespace inflight

#pragma once
// The policies a policy comparison (bench offline, simulate) runs, loaded from the
// deployment's plugin directory with its settings tables.

#include <string>
#include <vector>

#include "core/config/deployment.hpp"
#include "core/engine/sched/policy.hpp"
#include "core/route/route_policy.hpp"

namespace inflight::app {

/// Loads `name` from the plugin dir of `s` with its [scheduler.<name>] settings.
result<policy> try_load_policy(const scheduler_settings& s, const std::string& name);

/// Loads the routing policy `name` from the plugin dir of `s` (simulate's replicas; the
/// router takes the same directory).
result<route_policy> try_load_route_policy(const scheduler_settings& s, const std::string& name,
                                           const route_settings& settings);

/// The policies to run: `all` stands for every policy in the plugin directory (static
/// first, the baseline of the ratio column; then by name). One that does not load is
/// left out with a note on stderr (prefixed by `command`); a policy named explicitly
/// that does not load ends the command before anything runs.
std::vector<std::string> expand_policies(const std::vector<std::string>& asked, const scheduler_settings& s,
                                         const std::string& command);

}  // namespace inflight::app

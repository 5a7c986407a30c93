#include "apps/inflight/bench_policies.hpp"

#include <algorithm>
#include <cstdio>

#include "actors/engine/engine.hpp"
#include "apps/inflight/commands.hpp"

namespace inflight::app {

result<policy> try_load_policy(const scheduler_settings& s, const std::string& name) {
  policy_settings settings;
  if (auto it = s.policy_settings.find(name); it != s.policy_settings.end()) {
    auto parsed = try_parse_policy_settings(it->second);
    if (!parsed) return std::unexpected(parsed.error());
    settings = std::move(*parsed);
  }
  auto dir = try_policy_plugin_dir(s);
  if (!dir) return std::unexpected(dir.error());
  return policy::try_load(*dir, name, settings);
}

result<route_policy> try_load_route_policy(const scheduler_settings& s, const std::string& name,
                                           const route_settings& settings) {
  auto dir = try_policy_plugin_dir(s);
  if (!dir) return std::unexpected(dir.error());
  return route_policy::try_load(*dir, name, settings);
}

std::vector<std::string> expand_policies(const std::vector<std::string>& asked, const scheduler_settings& s,
                                         const std::string& command) {
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  for (const auto& name : asked) {
    if (name != "all") {
      // Every named policy loads before the first run: a typo fails at once, not after
      // the runs before it.
      if (auto ok = try_load_policy(s, name); !ok) fail("--policy " + name + ": " + ok.error().message);
      add(name);
      continue;
    }
    auto dir = try_policy_plugin_dir(s);
    if (!dir) fail(dir.error().message);
    auto names = try_list_policies(*dir);
    if (!names) fail(names.error().message);
    std::stable_partition(names->begin(), names->end(), [](const auto& n) { return n == "static"; });
    for (const auto& n : *names) {
      if (auto ok = try_load_policy(s, n); !ok) {
        std::fprintf(stderr, "%s: leaving out policy '%s': %s\n", command.c_str(), n.c_str(), ok.error().message.c_str());
        continue;
      }
      add(n);
    }
  }
  if (out.empty()) fail("no policy to run");
  return out;
}

}  // namespace inflight::app

#pragma once
/// A scheduling policy behind the C ABI of plugins/abi/inflight_policy.h: loaded from
/// a shared library with dlopen, or given as a vtable directly (tests, built-ins
/// linked statically). Owns the library handle and the policy instance.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/error.hpp"
#include "plugins/abi/inflight_policy.h"

namespace inflight {

/// The policy's own settings from the deployment file, as key/value strings.
using policy_settings = std::vector<std::pair<std::string, std::string>>;

/// The policy the engine uses when none is named.
inline constexpr std::string_view default_policy_name = "splitfuse";

class policy {
 public:
  /// Loads `<plugin_dir>/inflight_policy_<name>.so` and creates an instance.
  static result<policy> try_load(const std::filesystem::path& plugin_dir, std::string_view name,
                                 const policy_settings& settings = {});
  /// Loads a policy from an explicit library path.
  static result<policy> try_load_file(const std::filesystem::path& file,
                                      const policy_settings& settings = {});
  /// Uses a vtable that is already in this process (no library to close).
  static result<policy> try_from_vtable(const inflight_policy_vtable* vtable,
                                        const policy_settings& settings = {});

  policy(policy&& other) noexcept;
  policy& operator=(policy&& other) noexcept;
  policy(const policy&) = delete;
  policy& operator=(const policy&) = delete;
  ~policy();

  const std::string& name() const { return name_; }
  /// The ABI version the plugin was built for.
  std::uint32_t abi_version() const { return abi_version_; }
  /// Runs the plugin's decide on a view in the current layout (a plugin built for an
  /// older version gets a copy in its own); the decision is raw and must be validated.
  result<void> decide(const inflight_sched_view& view, inflight_decision& decision);

 private:
  policy() = default;
  static result<policy> try_create(const inflight_policy_vtable* vtable, std::string origin,
                                   const policy_settings& settings, void* library);
  void reset();

  const inflight_sched_view& view_for_plugin(const inflight_sched_view& view);

  const inflight_policy_vtable* vtable_ = nullptr;
  std::uint32_t abi_version_ = INFLIGHT_POLICY_ABI_VERSION;
  void* state_ = nullptr;
  void* library_ = nullptr;  // dlopen handle, closed after destroy
  std::string name_;
  std::string origin_;       // file (or "vtable") for error messages
  // Plugins of an older version: the view's arrays copied into their layout.
  std::vector<unsigned char> old_running_, old_waiting_;
  inflight_sched_view old_view_{};
};

/// Turns a policy's settings table, given as a JSON object (as the deployment loader
/// stores it), into key/value strings: strings as they are, numbers and booleans as
/// their JSON text. Nested objects and arrays are passed as JSON text too.
result<policy_settings> try_parse_policy_settings(std::string_view json_object);

/// Library file name of a policy: inflight_policy_<name>.so
std::string policy_file_name(std::string_view name);

/// Names of the policies in a plugin directory (every inflight_policy_<name>.so with a
/// valid name), sorted. Lists files only: loading one may still fail.
result<std::vector<std::string>> try_list_policies(const std::filesystem::path& plugin_dir);

}  // namespace inflight

#pragma once
/// A plugin's shared library: opened with dlopen, its one entry symbol looked up, closed
/// when the last owner lets go. Shared by the scheduling-policy and routing-policy
/// loaders (core/engine/sched/policy.cpp, core/route/route_policy.cpp).

#include <filesystem>
#include <string>
#include <string_view>

#include "core/base/error.hpp"

namespace inflight {

/// Letters, digits, '_' and '-', 1 to 64 of them: a plugin name that stays a file name
/// inside its directory.
bool is_valid_plugin_name(std::string_view name);

/// `plugin_dir / file_name`, the file of the plugin `name` of kind `what` ("policy",
/// "routing policy", "drafter"): a name that could leave the directory is invalid_argument,
/// a missing file not_found, each naming it.
result<std::filesystem::path> find_plugin_file(const std::filesystem::path& plugin_dir, std::string_view name,
                                               std::string_view file_name, std::string_view what);

class plugin_library {
 public:
  /// Opens `file` and finds `symbol` in it. `what` names the kind of plugin in errors.
  static result<plugin_library> try_open(const std::filesystem::path& file, const char* symbol, std::string_view what);

  plugin_library(plugin_library&& other) noexcept;
  plugin_library& operator=(plugin_library&& other) noexcept;
  plugin_library(const plugin_library&) = delete;
  plugin_library& operator=(const plugin_library&) = delete;
  ~plugin_library();

  void* symbol() const { return symbol_; }
  /// Gives up ownership: the caller closes the handle (dlclose) itself.
  void* release();

 private:
  plugin_library(void* handle, void* symbol) : handle_(handle), symbol_(symbol) {}
  void* handle_ = nullptr;
  void* symbol_ = nullptr;
};

}  // namespace inflight

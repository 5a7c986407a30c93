#pragma once
/// A routing policy behind the C ABI of plugins/abi/inflight_route.h: loaded from
/// `<plugin_dir>/inflight_route_<name>.so` with dlopen, or given as a vtable (tests).
/// Owns the library handle and the policy instance.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/error.hpp"
#include "plugins/abi/inflight_route.h"

namespace inflight {

using route_settings = std::vector<std::pair<std::string, std::string>>;

class route_policy {
 public:
  static result<route_policy> try_load(const std::filesystem::path& plugin_dir, std::string_view name,
                                       const route_settings& settings = {});
  static result<route_policy> try_from_vtable(const inflight_route_vtable* vtable, const route_settings& settings = {});

  route_policy(route_policy&& other) noexcept;
  route_policy& operator=(route_policy&& other) noexcept;
  route_policy(const route_policy&) = delete;
  route_policy& operator=(const route_policy&) = delete;
  ~route_policy();

  const std::string& name() const { return name_; }
  /// The plugin's raw answer (the router checks it).
  result<std::uint32_t> choose(const inflight_route_view& view);

 private:
  route_policy() = default;
  static result<route_policy> try_create(const inflight_route_vtable* vtable, std::string origin,
                                         const route_settings& settings, void* library);
  void reset();

  const inflight_route_vtable* vtable_ = nullptr;
  void* state_ = nullptr;
  void* library_ = nullptr;
  std::string name_;
};

/// inflight_route_<name>.so
std::string route_policy_file_name(std::string_view name);

}  // namespace inflight

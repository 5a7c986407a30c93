#include "core/route/route_policy.hpp"

#include "core/base/plugin_library.hpp"

#include <dlfcn.h>

#include <array>

namespace inflight {

std::string route_policy_file_name(std::string_view name) { return "inflight_route_" + std::string(name) + ".so"; }

result<route_policy> route_policy::try_load(const std::filesystem::path& plugin_dir, std::string_view name,
                                            const route_settings& settings) {
  const auto file = find_plugin_file(plugin_dir, name, route_policy_file_name(name), "routing policy");
  if (!file) return std::unexpected(file.error());
  auto library = plugin_library::try_open(*file, INFLIGHT_ROUTE_ENTRY_SYMBOL, "routing policy");
  if (!library) return std::unexpected(library.error());
  auto entry = reinterpret_cast<inflight_route_entry_fn>(library->symbol());
  auto created = try_create(entry(), file->string(), settings, nullptr);
  if (created) created->library_ = library->release();  // closed by the policy from now on
  return created;
}

result<route_policy> route_policy::try_from_vtable(const inflight_route_vtable* vtable, const route_settings& settings) {
  return try_create(vtable, "vtable", settings, nullptr);
}

result<route_policy> route_policy::try_create(const inflight_route_vtable* vtable, std::string origin,
                                              const route_settings& settings, void* library) {
  if (vtable == nullptr) return make_error(errc::invalid_argument, "routing policy " + origin + " returned no vtable");
  if (vtable->abi_version != INFLIGHT_ROUTE_ABI_VERSION)
    return make_error(errc::unsupported, "routing policy " + origin + " was built for routing ABI version " +
                                             std::to_string(vtable->abi_version) + ", this router loads version " +
                                             std::to_string(INFLIGHT_ROUTE_ABI_VERSION));
  if (vtable->create == nullptr || vtable->destroy == nullptr || vtable->choose == nullptr)
    return make_error(errc::invalid_argument, "routing policy " + origin + " has a null create, destroy or choose");
  std::vector<inflight_route_setting> c_settings;
  for (const auto& [key, value] : settings) c_settings.push_back({key.c_str(), value.c_str()});
  std::array<char, 512> message{};
  void* state = nullptr;
  const auto status = vtable->create(c_settings.data(), c_settings.size(), &state, message.data(), message.size());
  message.back() = '\0';
  std::string name = vtable->name != nullptr ? vtable->name : "unnamed";
  if (status != INFLIGHT_ROUTE_OK)
    return make_error(errc::invalid_argument,
                      "routing policy '" + name + "' (" + origin + ") refused its settings: " + message.data());
  route_policy p;
  p.vtable_ = vtable;
  p.state_ = state;
  p.library_ = library;
  p.name_ = std::move(name);
  return p;
}

route_policy::route_policy(route_policy&& other) noexcept { *this = std::move(other); }

route_policy& route_policy::operator=(route_policy&& other) noexcept {
  if (this == &other) return *this;
  reset();
  vtable_ = std::exchange(other.vtable_, nullptr);
  state_ = std::exchange(other.state_, nullptr);
  library_ = std::exchange(other.library_, nullptr);
  name_ = std::move(other.name_);
  return *this;
}

route_policy::~route_policy() { reset(); }

void route_policy::reset() {
  if (vtable_ != nullptr) vtable_->destroy(state_);
  if (library_ != nullptr) dlclose(library_);
  vtable_ = nullptr;
  state_ = nullptr;
  library_ = nullptr;
}

result<std::uint32_t> route_policy::choose(const inflight_route_view& view) {
  std::uint32_t index = 0;
  if (vtable_->choose(state_, &view, &index) != INFLIGHT_ROUTE_OK)
    return make_error(errc::internal, "routing policy '" + name_ + "' failed to choose");
  return index;
}

}  // namespace inflight

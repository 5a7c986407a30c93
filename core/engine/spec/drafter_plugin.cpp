#include "core/engine/spec/drafter_plugin.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <array>

#include "core/base/plugin_library.hpp"
#include "core/engine/spec/spec_config.hpp"

namespace inflight {
namespace {

constexpr std::string_view file_prefix = "inflight_drafter_";
constexpr std::string_view file_suffix = ".so";

}  // namespace

bool is_speculative_method_name(std::string_view name) {
  const auto& built_in = speculative_methods();
  return std::find(built_in.begin(), built_in.end(), name) != built_in.end() || is_valid_plugin_name(name);
}

std::string drafter_plugin_file_name(std::string_view name) {
  return std::string(file_prefix) + std::string(name) + std::string(file_suffix);
}

std::vector<std::string> find_drafter_plugins(const std::filesystem::path& plugin_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(plugin_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (!file.starts_with(file_prefix) || !file.ends_with(file_suffix)) continue;
    const std::string name = file.substr(file_prefix.size(), file.size() - file_prefix.size() - file_suffix.size());
    if (is_valid_plugin_name(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

result<std::unique_ptr<plugin_drafter>> plugin_drafter::try_load(const std::filesystem::path& plugin_dir,
                                                                 std::string_view name, int vocab_size) {
  const auto file = find_plugin_file(plugin_dir, name, drafter_plugin_file_name(name), "drafter");
  if (!file) return std::unexpected(file.error());
  auto library = plugin_library::try_open(*file, INFLIGHT_DRAFTER_ENTRY_SYMBOL, "drafter");
  if (!library) return std::unexpected(library.error());
  auto entry = reinterpret_cast<inflight_drafter_entry_fn>(library->symbol());
  auto created = try_create(entry(), file->string(), vocab_size);
  if (created) (*created)->library_ = library->release();  // closed by the drafter from now on
  return created;
}

result<std::unique_ptr<plugin_drafter>> plugin_drafter::try_from_vtable(const inflight_drafter_vtable* vtable,
                                                                        int vocab_size) {
  return try_create(vtable, "vtable", vocab_size);
}

result<std::unique_ptr<plugin_drafter>> plugin_drafter::try_create(const inflight_drafter_vtable* vtable,
                                                                   const std::string& origin, int vocab_size) {
  if (vtable == nullptr) return make_error(errc::invalid_argument, "drafter " + origin + " returned no vtable");
  if (vtable->abi_version != INFLIGHT_DRAFTER_ABI_VERSION)
    return make_error(errc::unsupported, "drafter " + origin + " was built for drafter ABI version " +
                                             std::to_string(vtable->abi_version) + ", this engine loads version " +
                                             std::to_string(INFLIGHT_DRAFTER_ABI_VERSION));
  if (vtable->create == nullptr || vtable->destroy == nullptr || vtable->propose == nullptr)
    return make_error(errc::invalid_argument, "drafter " + origin + " has a null create, destroy or propose");
  std::array<char, 512> message{};
  void* state = nullptr;
  const auto status = vtable->create(&state, message.data(), message.size());
  message.back() = '\0';
  std::string name = vtable->name != nullptr ? vtable->name : "unnamed";
  if (status != INFLIGHT_DRAFTER_OK)
    return make_error(errc::invalid_argument, "drafter '" + name + "' (" + origin + ") failed to start: " + message.data());
  std::unique_ptr<plugin_drafter> d(new plugin_drafter());
  d->vtable_ = vtable;
  d->state_ = state;
  d->name_ = std::move(name);
  d->vocab_size_ = vocab_size;
  return d;
}

plugin_drafter::~plugin_drafter() {
  if (vtable_ != nullptr) vtable_->destroy(state_);
  if (library_ != nullptr) dlclose(library_);
}

std::vector<token_id> plugin_drafter::propose(seq_id id, std::span<const token_id> tokens, int k) {
  if (k <= 0 || tokens.empty()) return {};
  std::vector<token_id> out(static_cast<std::size_t>(k));
  std::int32_t count = 0;
  if (vtable_->propose(state_, id, tokens.data(), tokens.size(), k, out.data(), &count) != INFLIGHT_DRAFTER_OK) return {};
  out.resize(std::size_t(std::clamp(count, 0, k)));
  // A token outside the vocabulary would be read as an embedding row that is not there.
  const auto bad = std::find_if(out.begin(), out.end(), [&](token_id t) { return t < 0 || t >= vocab_size_; });
  out.erase(bad, out.end());
  return out;
}

void plugin_drafter::on_finished(std::span<const token_id> tokens) {
  if (vtable_->on_finished != nullptr)
    vtable_->on_finished(state_, tokens.data(), tokens.size());
}

void plugin_drafter::forget(seq_id id) {
  if (vtable_->forget != nullptr) vtable_->forget(state_, id);
}

}  // namespace inflight

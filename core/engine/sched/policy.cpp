#include "core/engine/sched/policy.hpp"

#include "core/base/plugin_library.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <cstring>

#include <nlohmann/json.hpp>

namespace inflight {
namespace {

// inflight_seq_info as each older ABI version laid it out. A plugin walks the view's
// arrays with its own version's stride, so it must get arrays of exactly its struct:
// every version only appended fields, so an older struct is a prefix of ours.
struct seq_info_v1 {
  std::uint64_t seq_id;
  std::int32_t state;
  std::int32_t priority;
  double arrival_time;
  std::int32_t num_prompt_tokens;
  std::int32_t num_tokens;
  std::int32_t num_computed_tokens;
  std::int32_t num_generated_tokens;
  std::int32_t max_tokens;
  std::int32_t num_blocks_held;
  std::int32_t num_tokens_needed;
};
struct seq_info_v2 {
  std::uint64_t seq_id;
  std::int32_t state;
  std::int32_t priority;
  double arrival_time;
  std::int32_t num_prompt_tokens;
  std::int32_t num_tokens;
  std::int32_t num_computed_tokens;
  std::int32_t num_generated_tokens;
  std::int32_t max_tokens;
  std::int32_t num_blocks_held;
  std::int32_t num_tokens_needed;
  std::int32_t num_cached_tokens;  // where version 1 had its tail padding
  std::int32_t num_preemptions;
};
static_assert(sizeof(seq_info_v1) == 56);
static_assert(sizeof(seq_info_v2) == 64);
static_assert(sizeof(inflight_seq_info) == 88);
// The older fields sit where they always did.
static_assert(offsetof(inflight_seq_info, num_tokens_needed) == offsetof(seq_info_v1, num_tokens_needed));
static_assert(offsetof(inflight_seq_info, num_preemptions) == offsetof(seq_info_v2, num_preemptions));
static_assert(offsetof(inflight_seq_info, ttft_target) == sizeof(seq_info_v2));

/// One inflight_seq_info in the layout of an older ABI version: its size (the arrays'
/// stride) and the bytes of its fields (the rest is padding, left zero).
struct seq_info_layout {
  std::size_t stride;
  std::size_t fields_size;
};

seq_info_layout layout_of(std::uint32_t version) {
  if (version == 1) return {sizeof(seq_info_v1), offsetof(seq_info_v1, num_tokens_needed) + sizeof(std::int32_t)};
  return {sizeof(seq_info_v2), offsetof(seq_info_v2, num_preemptions) + sizeof(std::int32_t)};
}

const inflight_seq_info* to_layout(const inflight_seq_info* seqs, std::size_t n, seq_info_layout layout,
                                   std::vector<unsigned char>& out) {
  out.assign(n * layout.stride, 0);
  for (std::size_t i = 0; i < n; ++i) std::memcpy(out.data() + i * layout.stride, &seqs[i], layout.fields_size);
  // The plugin reads these bytes as its own (older) struct; never as ours.
  return reinterpret_cast<const inflight_seq_info*>(out.data());
}

}  // namespace

result<policy_settings> try_parse_policy_settings(std::string_view json_object) {
  if (json_object.find_first_not_of(" \t\r\n") == std::string_view::npos) return policy_settings{};
  auto parsed = nlohmann::json::parse(json_object, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object())
    return make_error(errc::invalid_argument, "policy settings must be a JSON object, got: " +
                                                  std::string(json_object.substr(0, 80)));
  policy_settings out;
  for (const auto& [key, value] : parsed.items())
    out.emplace_back(key, value.is_string() ? value.get<std::string>() : value.dump());
  return out;
}

std::string policy_file_name(std::string_view name) {
  return "inflight_policy_" + std::string(name) + ".so";
}

result<std::vector<std::string>> try_list_policies(const std::filesystem::path& plugin_dir) {
  constexpr std::string_view prefix = "inflight_policy_", suffix = ".so";
  std::error_code ec;
  std::filesystem::directory_iterator it(plugin_dir, ec), end;
  if (ec) return make_error(errc::io_error, "cannot list plugin dir " + plugin_dir.string() + ": " + ec.message());
  std::vector<std::string> names;
  for (; it != end; it.increment(ec)) {
    if (ec) return make_error(errc::io_error, "cannot list plugin dir " + plugin_dir.string() + ": " + ec.message());
    const std::string file = it->path().filename().string();
    if (file.size() <= prefix.size() + suffix.size() || !file.starts_with(prefix) || !file.ends_with(suffix)) continue;
    std::string name = file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
    if (is_valid_plugin_name(name)) names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

result<policy> policy::try_load(const std::filesystem::path& plugin_dir, std::string_view name,
                                const policy_settings& settings) {
  auto file = find_plugin_file(plugin_dir, name, policy_file_name(name), "policy");
  if (!file) return std::unexpected(file.error());
  return try_load_file(*file, settings);
}

result<policy> policy::try_load_file(const std::filesystem::path& file,
                                     const policy_settings& settings) {
  auto library = plugin_library::try_open(file, INFLIGHT_POLICY_ENTRY_SYMBOL, "policy");
  if (!library) return std::unexpected(library.error());
  auto entry = reinterpret_cast<inflight_policy_entry_fn>(library->symbol());
  auto created = try_create(entry(), file.string(), settings, nullptr);
  if (created) created->library_ = library->release();  // closed by the policy from now on
  return created;
}

result<policy> policy::try_from_vtable(const inflight_policy_vtable* vtable,
                                       const policy_settings& settings) {
  return try_create(vtable, "vtable", settings, nullptr);
}

result<policy> policy::try_create(const inflight_policy_vtable* vtable, std::string origin,
                                  const policy_settings& settings, void* library) {
  if (vtable == nullptr)
    return make_error(errc::invalid_argument, "policy plugin " + origin + " returned no vtable");
  if (vtable->abi_version < INFLIGHT_POLICY_MIN_ABI_VERSION || vtable->abi_version > INFLIGHT_POLICY_ABI_VERSION)
    return make_error(errc::unsupported,
                      "policy plugin " + origin + " was built for policy ABI version " +
                          std::to_string(vtable->abi_version) + ", this engine loads versions " +
                          std::to_string(INFLIGHT_POLICY_MIN_ABI_VERSION) + " to " +
                          std::to_string(INFLIGHT_POLICY_ABI_VERSION) + ": rebuild it against " +
                          "this engine's inflight_policy.h");
  if (vtable->create == nullptr || vtable->destroy == nullptr || vtable->decide == nullptr)
    return make_error(errc::invalid_argument,
                      "policy plugin " + origin + " has a null create, destroy or decide");
  std::vector<inflight_policy_setting> c_settings;
  for (const auto& [key, value] : settings) c_settings.push_back({key.c_str(), value.c_str()});
  std::array<char, 512> message{};
  void* state = nullptr;
  auto status = vtable->create(c_settings.data(), c_settings.size(), &state, message.data(),
                               message.size());
  message.back() = '\0';
  std::string name = vtable->name != nullptr ? vtable->name : "unnamed";
  if (status != INFLIGHT_POLICY_OK)
    return make_error(errc::invalid_argument, "policy '" + name + "' (" + origin +
                                                  ") refused its settings: " + message.data());
  policy p;
  p.vtable_ = vtable;
  p.abi_version_ = vtable->abi_version;
  p.state_ = state;
  p.library_ = library;
  p.name_ = std::move(name);
  p.origin_ = std::move(origin);
  return p;
}

policy::policy(policy&& other) noexcept { *this = std::move(other); }

policy& policy::operator=(policy&& other) noexcept {
  if (this == &other) return *this;
  reset();
  vtable_ = std::exchange(other.vtable_, nullptr);
  abi_version_ = other.abi_version_;
  state_ = std::exchange(other.state_, nullptr);
  library_ = std::exchange(other.library_, nullptr);
  name_ = std::move(other.name_);
  origin_ = std::move(other.origin_);
  return *this;
}

policy::~policy() { reset(); }

void policy::reset() {
  if (vtable_ != nullptr) vtable_->destroy(state_);
  if (library_ != nullptr) dlclose(library_);
  vtable_ = nullptr;
  state_ = nullptr;
  library_ = nullptr;
}

result<void> policy::decide(const inflight_sched_view& view, inflight_decision& decision) {
  if (vtable_ == nullptr) return make_error(errc::internal, "policy used after move");
  decision.num_scheduled = 0;
  decision.num_preempt = 0;
  decision.num_shed = 0;
  if (vtable_->decide(state_, &view_for_plugin(view), &decision) != INFLIGHT_POLICY_OK)
    return make_error(errc::internal, "policy '" + name_ + "' failed to decide step " +
                                          std::to_string(view.step_id));
  return {};
}

const inflight_sched_view& policy::view_for_plugin(const inflight_sched_view& view) {
  if (abi_version_ >= INFLIGHT_POLICY_ABI_VERSION) return view;
  const seq_info_layout layout = layout_of(abi_version_);
  old_view_ = view;
  old_view_.running = to_layout(view.running, view.num_running, layout, old_running_);
  old_view_.waiting = to_layout(view.waiting, view.num_waiting, layout, old_waiting_);
  return old_view_;
}

}  // namespace inflight

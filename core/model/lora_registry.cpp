#include "core/model/lora_registry.hpp"

#include <algorithm>
#include <atomic>
#include <utility>

namespace inflight {
namespace {

/// Registrations of the process: an id is never used twice, whichever registry.
std::atomic<std::uint64_t> next_registration{1};

}  // namespace

lora_registry::lora_registry(model_config base, int max_loaded) : base_(std::move(base)), max_loaded_(max_loaded) {}

result<std::shared_ptr<const lora_adapter>> lora_registry::load(const std::string& name, const std::string& path,
                                                                std::uint64_t id) const {
  auto a = try_load_lora_adapter(path, base_);
  if (!a) return make_error(a.error().code, "LoRA adapter " + name + ": " + a.error().message);
  a->name = name;
  a->id = id;
  return std::make_shared<const lora_adapter>(std::move(*a));
}

const lora_registry::entry* lora_registry::find(const std::string& name) const {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const entry& e) { return e.name == name; });
  return it == entries_.end() ? nullptr : &*it;
}

lora_registry::entry* lora_registry::find(const std::string& name) {
  return const_cast<entry*>(std::as_const(*this).find(name));
}

result<void> lora_registry::add(const std::string& name, const std::string& path) {
  if (name.empty()) return make_error(errc::invalid_argument, "a LoRA adapter needs a name");
  if (contains(name)) return make_error(errc::invalid_argument, "the LoRA adapter '" + name + "' is already loaded");
  const std::uint64_t id = next_registration++;
  auto adapter = load(name, path, id);  // outside the lock: other requests go on meanwhile
  if (!adapter) return std::unexpected(adapter.error());
  std::lock_guard lock(mutex_);
  if (find(name) != nullptr)
    return make_error(errc::invalid_argument, "the LoRA adapter '" + name + "' is already loaded");
  ++num_loads_;
  entries_.push_back({name, path, *adapter, id, (*adapter)->rank, ++clock_});
  drop_idle_over_limit();
  return {};
}

result<void> lora_registry::remove(const std::string& name) {
  std::lock_guard lock(mutex_);
  const entry* e = find(name);
  if (e == nullptr) return make_error(errc::not_found, "the LoRA adapter '" + name + "' is not loaded");
  entries_.erase(entries_.begin() + (e - entries_.data()));
  return {};
}

result<std::shared_ptr<const lora_adapter>> lora_registry::acquire(const std::string& name) {
  std::string path;
  std::uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    entry* e = find(name);
    if (e == nullptr) return make_error(errc::not_found, "the LoRA adapter '" + name + "' is not loaded");
    e->last_used = ++clock_;
    if (e->adapter) return e->adapter;
    path = e->path;
    id = e->id;
  }
  auto adapter = load(name, path, id);  // dropped earlier: read again, outside the lock
  if (!adapter) return std::unexpected(adapter.error());
  std::lock_guard lock(mutex_);
  entry* e = find(name);
  // Unloaded meanwhile, or replaced by another registration: this request still runs it.
  if (e == nullptr || e->id != id) return *adapter;
  if (!e->adapter) {  // another request may have read it too: one copy stays
    ++num_loads_;
    e->adapter = *adapter;
    e->rank = (*adapter)->rank;
  }
  e->last_used = ++clock_;
  auto out = e->adapter;
  drop_idle_over_limit();
  return out;
}

void lora_registry::drop_idle_over_limit() {
  if (max_loaded_ <= 0) return;
  for (;;) {
    int num_loaded = 0;
    entry* oldest_idle = nullptr;
    for (auto& e : entries_) {
      if (!e.adapter) continue;
      ++num_loaded;
      // Held by the registry alone: no request or step uses it.
      if (e.adapter.use_count() == 1 && (oldest_idle == nullptr || e.last_used < oldest_idle->last_used))
        oldest_idle = &e;
    }
    if (num_loaded <= max_loaded_ || oldest_idle == nullptr) return;
    oldest_idle->adapter.reset();
  }
}

bool lora_registry::contains(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return find(name) != nullptr;
}

std::vector<lora_registry::entry_info> lora_registry::list() const {
  std::lock_guard lock(mutex_);
  std::vector<entry_info> out;
  for (const auto& e : entries_) out.push_back({e.name, e.path, e.adapter != nullptr, e.rank});
  return out;
}

std::vector<std::string> lora_registry::names() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e.name);
  return out;
}

std::uint64_t lora_registry::num_loads() const {
  std::lock_guard lock(mutex_);
  return num_loads_;
}

}  // namespace inflight

#pragma once
/// The LoRA adapters a server knows by name (lora.adapters, POST /v1/load_lora_adapter)
/// and those of them held in memory. An adapter past lora.max_cpu_loras that no request
/// uses is dropped from memory, least recently used first, and read again from its path
/// when a request names it. Thread-safe: requests acquire adapters from any thread.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/model/lora.hpp"
#include "core/model/model_config.hpp"

namespace inflight {

class lora_registry {
 public:
  struct entry_info {
    std::string name;
    std::string path;
    bool is_loaded = false;  ///< held in memory now
    int rank = 0;            ///< of its last load
  };

  /// Adapters over a base model of `base`; at most `max_loaded` of them idle in memory
  /// (0 = no limit). Adapters in use by requests are never dropped, even past it.
  lora_registry(model_config base, int max_loaded);

  /// Registers `name` for the adapter at `path` and loads it now (an adapter that does not
  /// fit the base is refused and nothing is registered). invalid_argument when the name
  /// is taken or empty.
  result<void> add(const std::string& name, const std::string& path);
  /// Forgets `name` (not_found when unknown). Requests running with it finish with it;
  /// its memory goes with the last of them.
  result<void> remove(const std::string& name);
  /// The adapter `name` for a request, read again from its path when it was dropped
  /// (not_found for an unknown name; the load's error when the file went bad).
  result<std::shared_ptr<const lora_adapter>> acquire(const std::string& name);

  bool contains(const std::string& name) const;
  /// Every registered adapter, in the order of registration.
  std::vector<entry_info> list() const;
  std::vector<std::string> names() const;
  /// Loads from files since start (the first of each included): reloads show here.
  std::uint64_t num_loads() const;

 private:
  struct entry {
    std::string name, path;
    std::shared_ptr<const lora_adapter> adapter;  ///< null: not in memory
    std::uint64_t id = 0;                         ///< lora_adapter::id
    int rank = 0;
    std::uint64_t last_used = 0;
  };
  result<std::shared_ptr<const lora_adapter>> load(const std::string& name, const std::string& path,
                                                   std::uint64_t id) const;
  entry* find(const std::string& name);
  const entry* find(const std::string& name) const;
  /// Drops idle adapters, least recently used first, while more than max_loaded_ are held.
  void drop_idle_over_limit();

  model_config base_;
  int max_loaded_ = 0;
  mutable std::mutex mutex_;
  std::vector<entry> entries_;
  std::uint64_t clock_ = 0;
  std::uint64_t num_loads_ = 0;
};

}  // namespace inflight

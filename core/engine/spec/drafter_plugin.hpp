#pragma once
/// A drafter behind the C ABI of plugins/abi/inflight_drafter.h: loaded from
/// `<plugin_dir>/inflight_drafter_<name>.so` with dlopen, or given as a vtable (tests).
/// It owns the library handle and the plugin's instance. The engine loads every drafter
/// library of its plugin directory at start (find_drafter_plugins) and hands each to its
/// scheduler under its name.

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine/spec/drafter.hpp"
#include "plugins/abi/inflight_drafter.h"

namespace inflight {

class plugin_drafter final : public drafter {
 public:
  /// `vocab_size`: the model's; a guess is cut at its first token outside it.
  static result<std::unique_ptr<plugin_drafter>> try_load(const std::filesystem::path& plugin_dir, std::string_view name,
                                                          int vocab_size);
  static result<std::unique_ptr<plugin_drafter>> try_from_vtable(const inflight_drafter_vtable* vtable, int vocab_size);
  ~plugin_drafter() override;
  plugin_drafter(const plugin_drafter&) = delete;
  plugin_drafter& operator=(const plugin_drafter&) = delete;

  const std::string& name() const { return name_; }
  /// Its guess, cut to `k` tokens and at the first one outside the vocabulary; an error
  /// of the plugin drafts nothing.
  std::vector<token_id> propose(seq_id id, std::span<const token_id> tokens, int k) override;
  void on_finished(std::span<const token_id> tokens) override;
  void forget(seq_id id) override;

 private:
  plugin_drafter() = default;
  static result<std::unique_ptr<plugin_drafter>> try_create(const inflight_drafter_vtable* vtable,
                                                            const std::string& origin, int vocab_size);

  const inflight_drafter_vtable* vtable_ = nullptr;
  void* state_ = nullptr;
  void* library_ = nullptr;
  std::string name_;
  int vocab_size_ = 0;
};

/// inflight_drafter_<name>.so
std::string drafter_plugin_file_name(std::string_view name);
/// The names of the drafter libraries in `plugin_dir` (sorted; none when it is missing).
std::vector<std::string> find_drafter_plugins(const std::filesystem::path& plugin_dir);

}  // namespace inflight

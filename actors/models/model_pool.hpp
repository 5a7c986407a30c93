#pragma once
/// The models of a server that serves several ([[models]]), loaded on demand within
/// server.max_loaded_models and server.memory_budget: one loader thread loads a model when
/// a request (or POST /v1/models/{name}/load) wants it, unloading the least recently used
/// idle models first when the limits ask, and unloads a model idle for its keep_alive.
/// A model with requests running or waiting is never unloaded; a load that needs their
/// room waits until they finish. A load that fails fails that model's waiting requests
/// with its cause and leaves the others serving.

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "actors/model_control.hpp"
#include "actors/models/model_slot.hpp"

namespace inflight {

struct pool_limits {
  int max_loaded_models = 0;            ///< 0 = no limit
  std::int64_t memory_budget_bytes = 0; ///< 0 = no limit
};

class model_pool final : public model_control {
 public:
  explicit model_pool(pool_limits limits) : limits_(limits) {}
  ~model_pool() override;
  model_pool(const model_pool&) = delete;
  model_pool& operator=(const model_pool&) = delete;

  /// Adds a model (`d`: deployment_of() its entry). It loads now when `load_now` and the
  /// limits leave room for it beside those added before; else it is only read for the
  /// gateway (tokenizer, chat template, limits; GGUF and safetensors weights mapped, not
  /// read) and loads on first use. A model that cannot be read at all is an error (a bad
  /// path is a configuration error).
  result<model_slot*> add(const deployment& d, double keep_alive_s, bool load_now = true);
  /// Starts the loader thread (after every add()).
  void start();
  const std::vector<std::unique_ptr<model_slot>>& slots() const { return slots_; }

  // model_control
  model_status status(std::string_view name) const override;
  void load(std::string_view name, done_fn done) override;
  void unload(std::string_view name, done_fn done) override;
  void set_keep_alive(std::string_view name, double seconds) override;

  /// Stops the loader thread; every model's waiting requests finish (aborted) and its
  /// engine shuts down with `grace_s` for what runs. Idempotent.
  void shutdown(double grace_s);

 private:
  struct job {
    bool is_load = true;
    model_slot* slot = nullptr;
    std::vector<done_fn> done;
  };
  void run();
  void notify();
  void wants_load(model_slot& slot);
  model_slot* find(std::string_view name) const;
  /// Loads `slot` (after making room): true when finished (loaded or failed), false when
  /// the room it needs is held by models with requests (try again later).
  bool try_load(model_slot& slot, result<void>& outcome);
  /// The room check: none when `slot` fits beside the loaded models, else the least
  /// recently used idle one to unload first (null: wait), or an error when it never fits.
  result<model_slot*> victim_for(const model_slot& slot) const;
  void unload_now(model_slot& slot);
  void expire_idle();

  pool_limits limits_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<job> jobs_;
  bool is_stopping_ = false;
  bool is_shut_down_ = false;
  std::thread thread_;
  /// Declared last: destroyed first, while the mutex their hooks reach still lives.
  std::vector<std::unique_ptr<model_slot>> slots_;
};

}  // namespace inflight

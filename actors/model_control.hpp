#pragma once
/// What the gateway may ask of the models a server loads on demand (actors/models/):
/// each model's state and size for GET /v1/models, POST /v1/models/{name}/load and
/// /unload, and a request's keep_alive. Names are served names (not aliases).

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/base/error.hpp"

namespace inflight {

enum class model_state {
  loaded,    ///< its engine runs
  loading,   ///< its engine is starting; requests for it wait
  unloaded,  ///< no engine: the next request (or /load) loads it
  failed,    ///< its last load failed (model_status::error); the next request tries again
};

const char* to_string(model_state state);

struct model_status {
  model_state state = model_state::loaded;
  /// Weights + KV cache: measured while loaded, estimated from the files before.
  std::int64_t size_bytes = 0;
  std::string error;          ///< why the last load failed (state failed)
  double keep_alive_s = -1.0; ///< idle this long, it unloads (< 0: never)
  int num_requests = 0;       ///< running, and waiting for its load
};

class model_control {
 public:
  using done_fn = std::function<void(result<void>)>;
  virtual ~model_control() = default;
  virtual model_status status(std::string_view name) const = 0;
  /// Loads `name`, unloading the least recently used idle models when the limits ask;
  /// `done` hears the outcome (on another thread, never inside this call's caller).
  virtual void load(std::string_view name, done_fn done) = 0;
  /// Unloads `name` once its requests have finished; `done` hears when it has.
  virtual void unload(std::string_view name, done_fn done) = 0;
  /// A request's keep_alive (Ollama's): how long `name` stays loaded once idle from
  /// now on (0: unload when idle; < 0: keep it).
  virtual void set_keep_alive(std::string_view name, double seconds) = 0;
};

}  // namespace inflight

#pragma once
/// The executor: runs step plans on the backend, on its own thread. It decides nothing.

#include <memory>

#include "actors/engine/messages.hpp"
#include "core/engine/step/backend.hpp"

namespace inflight {

struct executor_state {
  std::unique_ptr<backend> be;
  static inline const char* name = "executor";
};

executor_actor::behavior_type executor_fn(executor_actor::stateful_pointer<executor_state> self,
                                          std::shared_ptr<std::unique_ptr<backend>> be);

}  // namespace inflight

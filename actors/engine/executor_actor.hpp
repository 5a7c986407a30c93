#pragma once
/// The executor: runs step plans on the backend, and the draft model's plans on the
/// draft model (speculative decoding), on its own thread. It decides nothing.

#include <memory>

#include "actors/engine/messages.hpp"
#include "backends/draft_model.hpp"
#include "core/engine/step/backend.hpp"

namespace inflight {

struct executor_state {
  std::unique_ptr<backend> be;
  std::unique_ptr<draft_model> draft;  ///< none: the deployment has no draft model
  static inline const char* name = "executor";
};

executor_actor::behavior_type executor_fn(executor_actor::stateful_pointer<executor_state> self,
                                          std::shared_ptr<std::unique_ptr<backend>> be,
                                          std::shared_ptr<std::unique_ptr<draft_model>> draft);

}  // namespace inflight

#include "actors/engine/executor_actor.hpp"

namespace inflight {

executor_actor::behavior_type executor_fn(executor_actor::stateful_pointer<executor_state> self,
                                          std::shared_ptr<std::unique_ptr<backend>> be) {
  self->state.be = std::move(*be);
  return {
      [self](execute_atom, const step_plan& plan) -> step_reply { return self->state.be->execute(plan); },
      [self](warm_up_atom) -> warm_up_reply {
        warm_up_reply out;
        if (auto ok = self->state.be->warm_up(); !ok) out.failure = std::move(ok.error());
        return out;
      },
  };
}

}  // namespace inflight

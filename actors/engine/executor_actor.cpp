#include "actors/engine/executor_actor.hpp"

namespace inflight {

executor_actor::behavior_type executor_fn(executor_actor::stateful_pointer<executor_state> self,
                                          std::shared_ptr<std::unique_ptr<backend>> be,
                                          std::shared_ptr<std::unique_ptr<draft_model>> draft) {
  self->state.be = std::move(*be);
  if (draft) self->state.draft = std::move(*draft);
  return {
      [self](execute_atom, const step_plan& plan) -> step_reply { return self->state.be->execute(plan); },
      [self](draft_atom, const draft_plan& plan) -> draft_reply {
        if (!self->state.draft) return make_error(errc::internal, "the executor has no draft model");
        return self->state.draft->run(plan);
      },
      [self](warm_up_atom) -> warm_up_reply {
        warm_up_reply out;
        if (auto ok = self->state.be->warm_up(); !ok) out.failure = std::move(ok.error());
        return out;
      },
  };
}

}  // namespace inflight

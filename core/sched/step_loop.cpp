#include "core/sched/step_loop.hpp"

namespace inflight {

result<step_loop> step_loop::try_create(const scheduler_config& config, int num_blocks, int block_size,
                                        policy pol, scheduler::clock_fn clock) {
  auto kv = kv_manager::try_create(num_blocks, block_size);
  if (!kv) return std::unexpected(kv.error());
  auto sched = scheduler::try_create(config, kv->snapshot(), std::move(pol), std::move(clock));
  if (!sched) return std::unexpected(sched.error());
  return step_loop(std::move(*sched), std::move(*kv));
}

result<step_plan> step_loop::plan() {
  auto request = sched_.schedule();
  if (!request) return std::unexpected(request.error());
  last_request_ = *request;
  auto grant = kv_.try_grant(*request);
  if (!grant) return std::unexpected(grant.error());
  return sched_.on_grant(std::move(*grant));
}

step_outcome step_loop::failed(step_outcome out, error cause) {
  auto events = sched_.fail_step(cause);
  out.events.insert(out.events.end(), events.begin(), events.end());
  out.failure = std::move(cause);
  return out;
}

result<step_outcome> step_loop::step(const executor_fn& execute) {
  step_outcome out;
  if (sched_.has_pending_step())
    return make_error(errc::internal, "step() called while a planned step is not applied");
  if (!needs_step()) return out;
  auto request = sched_.schedule();
  if (!request) return std::unexpected(request.error());
  out.events = sched_.take_shed_events();
  last_request_ = *request;
  auto grant = kv_.try_grant(*request);
  if (!grant) return failed(std::move(out), {errc::internal, "kv allocator: " + grant.error().message});
  auto plan = sched_.on_grant(std::move(*grant));
  if (!plan) return failed(std::move(out), {errc::internal, "kv allocator: " + plan.error().message});
  if (plan->seqs.empty()) return out;
  out.step_id = plan->step_id;
  out.shape = shape_of(*plan);
  auto result = execute(*plan);
  if (!result) return failed(std::move(out), {errc::backend_error, "backend error: " + result.error().message});
  auto events = sched_.apply(*result);
  if (!events) return failed(std::move(out), {errc::internal, "engine error: " + events.error().message});
  out.events.insert(out.events.end(), events->begin(), events->end());
  return out;
}

}  // namespace inflight

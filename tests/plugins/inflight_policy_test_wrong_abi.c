/* A policy built against a future ABI: the engine must refuse it with both versions. */
#include "inflight_policy.h"

static inflight_policy_status create(const inflight_policy_setting* settings, size_t num_settings,
                                     void** out_state, char* error, size_t capacity) {
  (void)settings; (void)num_settings; (void)error; (void)capacity;
  *out_state = 0;
  return INFLIGHT_POLICY_OK;
}
static void destroy(void* state) { (void)state; }
static inflight_policy_status decide(void* state, const inflight_sched_view* view,
                                     inflight_decision* decision) {
  (void)state; (void)view; (void)decision;
  return INFLIGHT_POLICY_OK;
}

static const inflight_policy_vtable vtable = {INFLIGHT_POLICY_ABI_VERSION + 41u, "wrong_abi",
                                              create, destroy, decide};

INFLIGHT_POLICY_EXPORT const inflight_policy_vtable* inflight_policy_entry(void) { return &vtable; }

/* A policy that answers garbage on purpose: unknown ids, duplicates, huge and negative
 * token counts, counts beyond the arrays' capacity, random preemptions. The engine must
 * stay consistent, count the rejections and still finish every request. */
#include <stdlib.h>
#include <string.h>

#include "inflight_policy.h"

typedef struct garbage_state {
  uint64_t rng;
} garbage_state;

static uint64_t next(garbage_state* s) {
  s->rng ^= s->rng << 13;
  s->rng ^= s->rng >> 7;
  s->rng ^= s->rng << 17;
  return s->rng;
}

static inflight_policy_status create(const inflight_policy_setting* settings, size_t num_settings,
                                     void** out_state, char* error, size_t capacity) {
  garbage_state* s = (garbage_state*)malloc(sizeof(garbage_state));
  size_t i;
  (void)error; (void)capacity;
  if (!s) return INFLIGHT_POLICY_ERROR;
  s->rng = 0x2545F4914F6CDD1Dull;
  for (i = 0; i < num_settings; ++i)
    if (strcmp(settings[i].key, "seed") == 0) s->rng ^= strtoull(settings[i].value, 0, 10) * 2654435761ull + 1;
  *out_state = s;
  return INFLIGHT_POLICY_OK;
}

static void destroy(void* state) { free(state); }

static uint64_t any_id(garbage_state* s, const inflight_sched_view* v) {
  size_t n = v->num_running + v->num_waiting;
  size_t k;
  if (n == 0 || next(s) % 4 == 0) return next(s) % 1000000u; /* usually unknown */
  k = (size_t)(next(s) % n);
  return k < v->num_running ? v->running[k].seq_id : v->waiting[k - v->num_running].seq_id;
}

static int32_t any_count(garbage_state* s) {
  switch (next(s) % 5) {
    case 0: return -(int32_t)(next(s) % 100);
    case 1: return 0;
    case 2: return 2000000000;
    default: return (int32_t)(next(s) % 40) + 1;
  }
}

static inflight_policy_status decide(void* state, const inflight_sched_view* view,
                                     inflight_decision* d) {
  garbage_state* s = (garbage_state*)state;
  size_t i;
  if (next(s) % 16 == 0) return INFLIGHT_POLICY_ERROR;
  for (i = 0; i < d->scheduled_capacity; ++i) {
    d->scheduled[i].seq_id = (i > 0 && next(s) % 5 == 0) ? d->scheduled[i - 1].seq_id : any_id(s, view);
    d->scheduled[i].num_tokens = any_count(s);
  }
  d->num_scheduled = d->scheduled_capacity + (next(s) % 3 == 0 ? 7 : 0); /* lies about the count */
  for (i = 0; i < d->preempt_capacity; ++i) d->preempt[i] = any_id(s, view);
  d->num_preempt = next(s) % 8 == 0 ? d->preempt_capacity : 0;
  return INFLIGHT_POLICY_OK;
}

static const inflight_policy_vtable vtable = {INFLIGHT_POLICY_ABI_VERSION, "test_garbage", create,
                                              destroy, decide};

INFLIGHT_POLICY_EXPORT const inflight_policy_vtable* inflight_policy_entry(void) { return &vtable; }

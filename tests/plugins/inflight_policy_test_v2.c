/* A policy built for policy ABI version 2, before inflight_seq_info gained the latency
 * targets of version 3: it walks the view's arrays with the version-2 struct below, as
 * a plugin compiled against the version-2 header did, and reads a version-2 field.
 * Running sequences first, then waiting ones with the longest cached prefix first
 * (ties: queue order), while seats, budget and free blocks last. */
#include <stddef.h>
#include <stdint.h>

#include "inflight_policy.h"

typedef struct v2_seq_info {
  uint64_t seq_id;
  int32_t state;
  int32_t priority;
  double arrival_time;
  int32_t num_prompt_tokens;
  int32_t num_tokens;
  int32_t num_computed_tokens;
  int32_t num_generated_tokens;
  int32_t max_tokens;
  int32_t num_blocks_held;
  int32_t num_tokens_needed;
  int32_t num_cached_tokens;
  int32_t num_preemptions;
} v2_seq_info;

static inflight_policy_status v2_create(const inflight_policy_setting* settings, size_t num_settings,
                                        void** out_state, char* error, size_t error_capacity) {
  (void)settings, (void)num_settings, (void)error, (void)error_capacity;
  *out_state = NULL;
  return INFLIGHT_POLICY_OK;
}

static void v2_destroy(void* state) { (void)state; }

static int32_t min32(int32_t a, int32_t b) { return a < b ? a : b; }

static int32_t blocks_for(int32_t tokens, int32_t block_size) { return (tokens + block_size - 1) / block_size; }

/* Index of the waiting sequence not taken yet with the most cached tokens; -1 when none. */
static long next_waiting(const v2_seq_info* waiting, size_t n, const unsigned char* taken) {
  long best = -1;
  for (size_t i = 0; i < n; ++i) {
    if (taken[i]) continue;
    if (best < 0 || waiting[i].num_cached_tokens > waiting[best].num_cached_tokens) best = (long)i;
  }
  return best;
}

static inflight_policy_status v2_decide(void* state, const inflight_sched_view* view, inflight_decision* d) {
  (void)state;
  const v2_seq_info* running = (const v2_seq_info*)(const void*)view->running;
  const v2_seq_info* waiting = (const v2_seq_info*)(const void*)view->waiting;
  const int32_t bs = view->budget.block_size;
  int32_t budget = view->budget.max_num_batched_tokens;
  int32_t free_blocks = view->budget.num_free_blocks;
  int32_t seats = view->budget.max_num_seqs - (int32_t)view->num_running;
  unsigned char taken[256] = {0};
  for (size_t i = 0; i < view->num_running && budget > 0 && d->num_scheduled < d->scheduled_capacity; ++i) {
    int32_t n = min32(running[i].num_tokens_needed, budget);
    free_blocks -= blocks_for(running[i].num_computed_tokens + n, bs) - running[i].num_blocks_held;
    d->scheduled[d->num_scheduled].seq_id = running[i].seq_id;
    d->scheduled[d->num_scheduled++].num_tokens = n;
    budget -= n;
  }
  size_t num_waiting = view->num_waiting < sizeof taken ? view->num_waiting : sizeof taken;
  while (budget > 0 && seats > 0 && free_blocks > 0) {
    long i = next_waiting(waiting, num_waiting, taken);
    if (i < 0) break;
    taken[i] = 1;
    int32_t fit = free_blocks * bs - waiting[i].num_computed_tokens;
    int32_t n = min32(min32(waiting[i].num_tokens_needed, budget), fit);
    if (n <= 0 || (int)d->num_scheduled >= (int)view->budget.max_num_seqs) break;
    free_blocks -= blocks_for(waiting[i].num_computed_tokens + n, bs);
    d->scheduled[d->num_scheduled].seq_id = waiting[i].seq_id;
    d->scheduled[d->num_scheduled++].num_tokens = n;
    budget -= n;
    --seats;
  }
  return INFLIGHT_POLICY_OK;
}

static const inflight_policy_vtable v2_vtable = {2u, "test_v2", v2_create, v2_destroy, v2_decide};

INFLIGHT_POLICY_EXPORT const inflight_policy_vtable* inflight_policy_entry(void) { return &v2_vtable; }

/* shortest_first: a custom scheduling policy to copy.
 *
 * Decodes first (running sequences, oldest first), then waiting sequences with the
 * fewest tokens still to compute, so short prompts get their first token sooner.
 * Prompts are chunked to the token budget and to the free KV blocks. The price: a long
 * prompt can wait behind a steady stream of short ones (no starvation guard).
 *
 * Build: see README.md. Use: [scheduler] policy = "shortest_first",
 * plugin_dir = "<dir holding inflight_policy_shortest_first.so>". */
#include <stdlib.h>
#include <string.h>

#include "inflight_policy.h"

static int by_need(const void* a, const void* b) {
  const inflight_seq_info* x = *(const inflight_seq_info* const*)a;
  const inflight_seq_info* y = *(const inflight_seq_info* const*)b;
  if (x->num_tokens_needed != y->num_tokens_needed) return x->num_tokens_needed < y->num_tokens_needed ? -1 : 1;
  return x->arrival_time < y->arrival_time ? -1 : (x->arrival_time > y->arrival_time ? 1 : 0);
}

static int min3(int a, int b, int c) { return a < b ? (a < c ? a : c) : (b < c ? b : c); }

static inflight_policy_status create(const inflight_policy_setting* settings, size_t num_settings,
                                     void** out_state, char* error, size_t capacity) {
  (void)settings;
  *out_state = NULL;  /* stateless */
  if (num_settings > 0) {
    if (capacity > 0) {
      strncpy(error, "shortest_first takes no settings", capacity - 1);
      error[capacity - 1] = '\0';
    }
    return INFLIGHT_POLICY_ERROR;
  }
  return INFLIGHT_POLICY_OK;
}

static void destroy(void* state) { (void)state; }

static void push(inflight_decision* d, uint64_t id, int n) {
  if (d->num_scheduled < d->scheduled_capacity) {
    d->scheduled[d->num_scheduled].seq_id = id;
    d->scheduled[d->num_scheduled].num_tokens = n;
    d->num_scheduled++;
  }
}

static inflight_policy_status decide(void* state, const inflight_sched_view* v, inflight_decision* d) {
  const inflight_sched_budget* b = &v->budget;
  int budget = b->max_num_batched_tokens, free_blocks = b->num_free_blocks;
  int seats = b->max_num_seqs - (int)v->num_running;
  const inflight_seq_info** order;
  size_t i;
  (void)state;
  /* running first: the engine preempts others if their next blocks are missing */
  for (i = 0; i < v->num_running && budget > 0 && (int)d->num_scheduled < b->max_num_seqs; ++i) {
    int n = v->running[i].num_tokens_needed < budget ? v->running[i].num_tokens_needed : budget;
    free_blocks -= inflight_blocks_needed(&v->running[i], n, b->block_size);
    push(d, v->running[i].seq_id, n);
    budget -= n;
  }
  if (v->num_waiting == 0) return INFLIGHT_POLICY_OK;
  order = (const inflight_seq_info**)malloc(v->num_waiting * sizeof(*order));
  if (order == NULL) return INFLIGHT_POLICY_ERROR;
  for (i = 0; i < v->num_waiting; ++i) order[i] = &v->waiting[i];
  qsort(order, v->num_waiting, sizeof(*order), by_need);
  for (i = 0; i < v->num_waiting; ++i) {
    const inflight_seq_info* s = order[i];
    int n;
    if (budget <= 0 || seats <= 0 || free_blocks <= 0 || (int)d->num_scheduled >= b->max_num_seqs) break;
    n = min3(s->num_tokens_needed, budget, inflight_tokens_fitting(s, free_blocks, b->block_size));
    if (n <= 0) break;
    free_blocks -= inflight_blocks_needed(s, n, b->block_size);
    push(d, s->seq_id, n);
    budget -= n;
    --seats;
  }
  free(order);
  return INFLIGHT_POLICY_OK;
}

static const inflight_policy_vtable vtable = {INFLIGHT_POLICY_ABI_VERSION, "shortest_first", create,
                                              destroy, decide};

INFLIGHT_POLICY_EXPORT const inflight_policy_vtable* inflight_policy_entry(void) { return &vtable; }

/* A drafter for the tests of the drafter ABI (plugins/abi/inflight_drafter.h), in C:
 * it remembers the last sequence that finished on its own (on_finished) and, for a
 * sequence whose tokens so far begin that one, proposes what came next in it. A request
 * sent twice drafts nothing the first time and its whole output the second. */
#include <stdlib.h>
#include <string.h>

#include "inflight_drafter.h"

typedef struct recall_state {
  int32_t* tokens;
  size_t num_tokens;
} recall_state;

static inflight_drafter_status recall_create(void** out_state, char* error, size_t error_capacity) {
  (void)error, (void)error_capacity;
  recall_state* s = (recall_state*)calloc(1, sizeof(recall_state));
  if (s == NULL) return INFLIGHT_DRAFTER_ERROR;
  *out_state = s;
  return INFLIGHT_DRAFTER_OK;
}

static void recall_destroy(void* state) {
  recall_state* s = (recall_state*)state;
  free(s->tokens);
  free(s);
}

static inflight_drafter_status recall_propose(void* state, uint64_t seq, const int32_t* tokens, size_t num_tokens,
                                              int32_t max_tokens, int32_t* out, int32_t* out_count) {
  (void)seq;
  const recall_state* s = (const recall_state*)state;
  *out_count = 0;
  if (num_tokens >= s->num_tokens || memcmp(tokens, s->tokens, num_tokens * sizeof(int32_t)) != 0)
    return INFLIGHT_DRAFTER_OK;
  size_t n = s->num_tokens - num_tokens;
  if (n > (size_t)max_tokens) n = (size_t)max_tokens;
  memcpy(out, s->tokens + num_tokens, n * sizeof(int32_t));
  *out_count = (int32_t)n;
  return INFLIGHT_DRAFTER_OK;
}

static void recall_on_finished(void* state, const int32_t* tokens, size_t num_tokens) {
  recall_state* s = (recall_state*)state;
  int32_t* copy = (int32_t*)malloc(num_tokens * sizeof(int32_t));
  if (copy == NULL) return;
  memcpy(copy, tokens, num_tokens * sizeof(int32_t));
  free(s->tokens);
  s->tokens = copy;
  s->num_tokens = num_tokens;
}

static const inflight_drafter_vtable recall_vtable = {INFLIGHT_DRAFTER_ABI_VERSION, "test_recall", recall_create,
                                                      recall_destroy, recall_propose, recall_on_finished, NULL};

INFLIGHT_DRAFTER_EXPORT const inflight_drafter_vtable* inflight_drafter_entry(void) { return &recall_vtable; }

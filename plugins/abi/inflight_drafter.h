/* inflight drafter plugin ABI (plain C): speculative decoding's drafters.
 *
 * A drafter is a shared library `inflight_drafter_<name>.so` in the plugin directory
 * (the scheduling policies' one) that exports one symbol:
 *
 *     const inflight_drafter_vtable* inflight_drafter_entry(void);
 *
 * The engine finds every such library when it starts; a request (the `speculative`
 * field) or the deployment (`speculative.method`) chooses it by <name>. The engine owns
 * the mechanism: which sequences draft in a step and how many tokens (the budget rule),
 * the check of every drafted token against the model, and the rollback of refuted ones.
 * The drafter owns the guess: up to `max_tokens` tokens to follow a sequence. A guess
 * never changes the output, only how many tokens a step gives: a drafter that is always
 * wrong costs one checked row per drafted token, and the budget rule stops drafting for
 * a sequence whose drafts are refuted.
 *
 * All calls come from one thread (the engine's scheduler), one at a time.
 *
 * Compatibility: fields are only appended, with a version bump; the engine refuses any
 * `abi_version` it does not know.
 *
 *   version 1  the first
 */
#ifndef INFLIGHT_DRAFTER_H
#define INFLIGHT_DRAFTER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INFLIGHT_DRAFTER_ABI_VERSION 1u
#define INFLIGHT_DRAFTER_ENTRY_SYMBOL "inflight_drafter_entry"

#if defined(_WIN32)
#define INFLIGHT_DRAFTER_EXPORT __declspec(dllexport)
#else
#define INFLIGHT_DRAFTER_EXPORT __attribute__((visibility("default")))
#endif

typedef enum inflight_drafter_status { INFLIGHT_DRAFTER_OK = 0, INFLIGHT_DRAFTER_ERROR = 1 } inflight_drafter_status;

/** The table a plugin exports. `abi_version` stays the first field forever. */
typedef struct inflight_drafter_vtable {
  uint32_t abi_version; /**< INFLIGHT_DRAFTER_ABI_VERSION the plugin was built with */
  const char* name;
  /** Creates an instance for one engine; on failure writes a NUL-terminated message into `error`. */
  inflight_drafter_status (*create)(void** out_state, char* error, size_t error_capacity);
  void (*destroy)(void* state);
  /** Up to `max_tokens` (>= 1) tokens to follow `tokens` (sequence `seq`'s prompt and
   *  output so far, `num_tokens` >= 1 of them): written to `out`, their number to
   *  *out_count (0: no guess). An error drafts nothing this step. */
  inflight_drafter_status (*propose)(void* state, uint64_t seq, const int32_t* tokens, size_t num_tokens,
                                     int32_t max_tokens, int32_t* out, int32_t* out_count);
  /** Optional (may be NULL): a sequence finished on its own (stop or length) with these
   *  tokens, prompt and output: what a drafter that learns across requests learns from. */
  void (*on_finished)(void* state, const int32_t* tokens, size_t num_tokens);
  /** Optional (may be NULL): sequence `seq` ended, however; what was kept for it can go. */
  void (*forget)(void* state, uint64_t seq);
} inflight_drafter_vtable;

/** The one exported symbol. */
typedef const inflight_drafter_vtable* (*inflight_drafter_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* INFLIGHT_DRAFTER_H */

/* inflight routing-policy plugin ABI (plain C).
 *
 * A routing policy is a shared library `inflight_route_<name>.so` that exports one symbol:
 *
 *     const inflight_route_vtable* inflight_route_entry(void);
 *
 * The router (in front of several engines) owns the mechanism: which engines it can
 * reach, their load as they last reported it, and an exact index of the KV blocks each
 * one holds. The policy owns the choice: which engine takes the next request. It gets a
 * read-only view and answers with an index; the router checks the answer (an engine out
 * of range or not available is refused, and the request goes to the least-loaded
 * available engine instead, counted).
 *
 * Compatibility: as the scheduling ABI (inflight_policy.h): fields are only appended,
 * with a version bump; the router refuses any `abi_version` it does not know.
 *
 *   version 1  the first
 */
#ifndef INFLIGHT_ROUTE_H
#define INFLIGHT_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INFLIGHT_ROUTE_ABI_VERSION 1u
#define INFLIGHT_ROUTE_ENTRY_SYMBOL "inflight_route_entry"

#if defined(_WIN32)
#define INFLIGHT_ROUTE_EXPORT __declspec(dllexport)
#else
#define INFLIGHT_ROUTE_EXPORT __attribute__((visibility("default")))
#endif

typedef enum inflight_route_status { INFLIGHT_ROUTE_OK = 0, INFLIGHT_ROUTE_ERROR = 1 } inflight_route_status;

/** One engine as the router last heard of it. */
typedef struct inflight_route_engine {
  uint32_t index;             /**< its position in the router's list (the answer names it) */
  int32_t is_available;       /**< 0: unreachable or draining; never to be chosen */
  int32_t num_waiting;        /**< requests queued there, not started */
  int32_t num_running;        /**< sequences running there */
  int32_t num_free_blocks;    /**< KV blocks free */
  int32_t num_total_blocks;
  int32_t num_cached_blocks;  /**< leading full blocks of this request's prompt it holds */
  uint64_t num_routed;        /**< requests this router has sent it so far */
} inflight_route_engine;

/** The request being routed. */
typedef struct inflight_route_request {
  int32_t num_prompt_tokens;
  int32_t num_prompt_blocks;  /**< full KV blocks of the prompt */
  int32_t block_size;         /**< tokens per block */
} inflight_route_request;

/** Read-only; valid only during choose(). */
typedef struct inflight_route_view {
  const inflight_route_engine* engines;
  size_t num_engines;         /**< >= 1, and at least one is available */
  inflight_route_request request;
} inflight_route_view;

/** One `key = value` setting from the deployment (strings; the policy parses). */
typedef struct inflight_route_setting {
  const char* key;
  const char* value;
} inflight_route_setting;

/** The table a plugin exports. `abi_version` stays the first field forever. */
typedef struct inflight_route_vtable {
  uint32_t abi_version; /**< INFLIGHT_ROUTE_ABI_VERSION the plugin was built with */
  const char* name;
  /** Creates an instance; on failure writes a NUL-terminated message into `error`. */
  inflight_route_status (*create)(const inflight_route_setting* settings, size_t num_settings, void** out_state,
                                  char* error, size_t error_capacity);
  void (*destroy)(void* state);
  /** Writes the chosen engine's `index` into *out_index. */
  inflight_route_status (*choose)(void* state, const inflight_route_view* view, uint32_t* out_index);
} inflight_route_vtable;

/** vLLM's load figure for an engine: 4 x waiting + running. */
static inline int64_t inflight_route_load(const inflight_route_engine* e) {
  return 4 * (int64_t)e->num_waiting + (int64_t)e->num_running;
}

/** The one exported symbol. */
typedef const inflight_route_vtable* (*inflight_route_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* INFLIGHT_ROUTE_H */

/* inflight scheduling-policy plugin ABI (plain C).
 *
 * A policy is a shared library `inflight_policy_<name>.so` that exports one symbol:
 *
 *     const inflight_policy_vtable* inflight_policy_entry(void);
 *
 * The engine owns the mechanism (queues, token budget, KV blocks, validation); the
 * policy owns the choice: which sequences get how many tokens this step, and whom to
 * preempt. Every call gets a read-only view and writes into arrays the engine owns.
 * The engine validates every decision: a bad decision can make scheduling worse but
 * never corrupts the engine's state.
 *
 * Compatibility: new fields are only ever appended, with a version bump. The engine
 * loads plugins built for any version from INFLIGHT_POLICY_MIN_ABI_VERSION to
 * INFLIGHT_POLICY_ABI_VERSION and hands each the struct layout of its own version (its
 * arrays have that version's stride); it refuses any other `abi_version`.
 *
 *   version 1  the first
 *   version 2  inflight_seq_info gains num_cached_tokens (prefix caching) and
 *              num_preemptions
 *   version 3  latency targets and what slack is computed from: inflight_seq_info
 *              gains ttft_target, tpot_target and first_token_time (arrival_time and
 *              num_generated_tokens were there); inflight_sched_view gains now (the
 *              step's time); inflight_decision gains shed (requests given up on)
 *
 * Slack, as a version-3 policy computes it (all times in seconds, engine clock):
 *   before the first token:  arrival_time + ttft_target - now  (- the prefill still to do)
 *   while decoding:          first_token_time + tpot_target * num_generated_tokens - now
 *                            (the time the next token may take and the request still
 *                            meet its mean time per output token)
 * A target of 0 means none. The view and the decision are read by a plugin only up to
 * its own version's fields, so they grow at their end without a stride problem.
 */
#ifndef INFLIGHT_POLICY_H
#define INFLIGHT_POLICY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INFLIGHT_POLICY_ABI_VERSION 3u
#define INFLIGHT_POLICY_MIN_ABI_VERSION 1u
#define INFLIGHT_POLICY_ENTRY_SYMBOL "inflight_policy_entry"

#if defined(_WIN32)
#define INFLIGHT_POLICY_EXPORT __declspec(dllexport)
#else
#define INFLIGHT_POLICY_EXPORT __attribute__((visibility("default")))
#endif

/** Status of a plugin call. */
typedef enum inflight_policy_status {
  INFLIGHT_POLICY_OK = 0,
  INFLIGHT_POLICY_ERROR = 1
} inflight_policy_status;

/** Where a sequence is. */
typedef enum inflight_seq_state {
  INFLIGHT_SEQ_WAITING = 0,   /**< never scheduled yet */
  INFLIGHT_SEQ_RUNNING = 1,   /**< admitted: holds KV blocks */
  INFLIGHT_SEQ_PREEMPTED = 2  /**< lost its blocks; recomputes prompt + generated tokens */
} inflight_seq_state;

/** One live sequence as the policy sees it. */
typedef struct inflight_seq_info {
  uint64_t seq_id;
  int32_t state;                 /**< an inflight_seq_state */
  int32_t priority;              /**< larger = more important; default 0 */
  double arrival_time;           /**< seconds on the engine's clock */
  int32_t num_prompt_tokens;
  int32_t num_tokens;            /**< prompt + generated */
  int32_t num_computed_tokens;   /**< tokens already in the KV cache; for a waiting
                                      sequence, its cached prefix */
  int32_t num_generated_tokens;
  int32_t max_tokens;            /**< generation limit of the request */
  int32_t num_blocks_held;       /**< 0 while waiting */
  int32_t num_tokens_needed;     /**< num_tokens - num_computed_tokens: 1 for a decode */
  /* version 2 */
  int32_t num_cached_tokens;     /**< waiting: leading tokens the prefix cache holds
                                      (whole blocks, never the last token; admitting
                                      it starts there, and a cached block nobody holds
                                      costs a free block like a new one). Running: the
                                      tokens its first admission took from it. */
  int32_t num_preemptions;       /**< times it lost its blocks so far */
  /* version 3 */
  double ttft_target;            /**< seconds from arrival to the first token; 0 = none */
  double tpot_target;            /**< mean seconds per output token after the first; 0 = none */
  double first_token_time;       /**< when its first token was sampled (engine clock); < 0 = not yet */
} inflight_seq_info;

/** Limits of one step. */
typedef struct inflight_sched_budget {
  int32_t max_num_batched_tokens; /**< token budget of the step */
  int32_t max_num_seqs;           /**< most sequences in a step and most running at once */
  int32_t num_free_blocks;        /**< KV blocks free before this step */
  int32_t num_total_blocks;
  int32_t block_size;             /**< tokens per KV block */
} inflight_sched_budget;

/** Read-only view of the queues; valid only during decide(). */
typedef struct inflight_sched_view {
  uint64_t step_id;
  const inflight_seq_info* running; /**< in admission order */
  size_t num_running;
  const inflight_seq_info* waiting; /**< queue order: preempted first, then arrivals */
  size_t num_waiting;
  inflight_sched_budget budget;
  /* version 3 */
  double now;                       /**< the step's time, seconds on the engine's clock */
} inflight_sched_view;

/** One grant: `num_tokens` of sequence `seq_id` are processed this step. */
typedef struct inflight_schedule_entry {
  uint64_t seq_id;
  int32_t num_tokens;
} inflight_schedule_entry;

/** The policy's answer, written into arrays the engine owns. The engine processes
 *  `shed` first (version 3), then `preempt`, then `scheduled` in order (earlier
 *  entries get blocks first). */
typedef struct inflight_decision {
  inflight_schedule_entry* scheduled;
  size_t scheduled_capacity;   /**< = num_running + num_waiting */
  size_t num_scheduled;        /**< set by the policy */
  uint64_t* preempt;           /**< running sequences to preempt (recompute later) */
  size_t preempt_capacity;     /**< = num_running */
  size_t num_preempt;          /**< set by the policy */
  /* version 3 */
  uint64_t* shed;              /**< sequences to finish now, unserved: they cannot meet
                                    their targets. The client gets an error (HTTP 429,
                                    code queue_timeout, "shed by the scheduling
                                    policy: ..."); the engine counts them. */
  size_t shed_capacity;        /**< = num_running + num_waiting */
  size_t num_shed;             /**< set by the policy */
} inflight_decision;

/** One `key = value` setting from the deployment file (strings; the policy parses). */
typedef struct inflight_policy_setting {
  const char* key;
  const char* value;
} inflight_policy_setting;

/** The table a plugin exports. `abi_version` stays the first field forever. */
typedef struct inflight_policy_vtable {
  uint32_t abi_version;  /**< INFLIGHT_POLICY_ABI_VERSION the plugin was built with */
  const char* name;
  /** Creates a policy instance; on failure writes a message into error (capacity
   *  error_capacity, NUL-terminated) and returns INFLIGHT_POLICY_ERROR. */
  inflight_policy_status (*create)(const inflight_policy_setting* settings, size_t num_settings,
                                   void** out_state, char* error, size_t error_capacity);
  void (*destroy)(void* state);
  /** Fills `decision`; the engine has zeroed num_scheduled, num_preempt and num_shed. */
  inflight_policy_status (*decide)(void* state, const inflight_sched_view* view,
                                   inflight_decision* decision);
} inflight_policy_vtable;

/** New KV blocks `seq` needs to compute `num_tokens` more tokens. */
static inline int32_t inflight_blocks_needed(const inflight_seq_info* seq, int32_t num_tokens,
                                             int32_t block_size) {
  int32_t total = seq->num_computed_tokens + num_tokens;
  int32_t blocks = (total + block_size - 1) / block_size;
  return blocks > seq->num_blocks_held ? blocks - seq->num_blocks_held : 0;
}

/** Most tokens `seq` can compute if it gets `num_free_blocks` more blocks (may be <= 0). */
static inline int32_t inflight_tokens_fitting(const inflight_seq_info* seq, int32_t num_free_blocks,
                                              int32_t block_size) {
  return (seq->num_blocks_held + num_free_blocks) * block_size - seq->num_computed_tokens;
}

/** The one exported symbol. */
typedef const inflight_policy_vtable* (*inflight_policy_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* INFLIGHT_POLICY_H */

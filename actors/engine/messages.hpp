#pragma once
/// Atoms and typed interfaces of the engine's actors (CAF 0.17).
///
///   request actor --submit/cancel/finish--> scheduler actor --[draft,] execute--> executor actor
///         ^                                      |   (grant, once per step: kv-allocator actor)
///         +------------- token / finished -------+

#include <caf/all.hpp>

#include <optional>

#include "actors/engine_api.hpp"
#include "core/engine/kv/kv_grant.hpp"
#include "core/engine/sched/scheduler.hpp"
#include "core/engine/spec/draft_plan.hpp"
#include "core/engine/step/step_plan.hpp"

namespace inflight {

using submit_atom = caf::atom_constant<caf::atom("submit")>;
/// Several requests at once (engine::submit_all): all queued before the next plan.
using submit_all_atom = caf::atom_constant<caf::atom("submitall")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using finish_atom = caf::atom_constant<caf::atom("finish")>;
using execute_atom = caf::atom_constant<caf::atom("execute")>;
using step_atom = caf::atom_constant<caf::atom("step")>;
using token_atom = caf::atom_constant<caf::atom("token")>;
using finished_atom = caf::atom_constant<caf::atom("finished")>;
using drain_atom = caf::atom_constant<caf::atom("drain")>;
using abort_atom = caf::atom_constant<caf::atom("abort")>;
using grant_atom = caf::atom_constant<caf::atom("grant")>;
using warm_up_atom = caf::atom_constant<caf::atom("warmup")>;
/// The draft model's work of a step (speculative decoding's `draft` drafter).
using draft_atom = caf::atom_constant<caf::atom("draft")>;
/// A full cache report (actors/cache_feed.hpp): the scheduler actor asks the kv
/// allocator for every cached hash and publishes them.
using full_report_atom = caf::atom_constant<caf::atom("fullreport")>;

/// The executor's reply: a result, or the backend's error.
using step_reply = result<step_result>;
/// draft_atom's reply: the drafted tokens, or the draft model's error.
using draft_reply = result<draft_result>;
/// warm_up_atom's reply: the backend's error, if any.
struct warm_up_reply {
  std::optional<error> failure;
};

/// The kv-allocator's answer to a step's kv_request (an error: refused, nothing changed).
using kv_reply = result<kv_grant>;

/// Everything a request actor starts with; the scheduler actor spawns it, so that
/// threads outside the actor system only ever send messages.
struct request_context {
  request_id id = 0;
  std::vector<std::string> stop;      ///< the request's stop strings
  std::vector<token_id> stop_token_ids;  ///< the request's stop tokens (named by finish_event::stop_token)
  int num_prompt_tokens = 0;
  token_id last_prompt_token = -1;    ///< decides the first token's leading space (text_stream)
  bool has_logprobs = false;          ///< the request asked for logprobs
  std::shared_ptr<request_sink> sink;
  std::shared_ptr<const tokenizer> tok;
  std::shared_ptr<engine_metrics> metrics;
  std::shared_ptr<std::atomic<int>> num_live;  ///< requests not yet finished
};

/// One request for the scheduler actor: its sequence and its request actor's start.
struct queued_request {
  seq_request seq;
  request_context ctx;
};

/// A token for a request actor, with its sequence's times after it (core's clock).
struct token_message {
  sampled_token token;
  seq_timestamps times;
  bool is_stop_token = false;  ///< seq_event::is_stop_token: no text of its own
};

/// warm_up_atom: backend::warm_up() once, before the scheduler exists (the reply's
/// `failure` is set when it failed). draft_atom: the draft model drafts, before the step
/// that checks its tokens.
using executor_actor = caf::typed_actor<caf::replies_to<execute_atom, step_plan>::with<step_reply>,
                                        caf::replies_to<draft_atom, draft_plan>::with<draft_reply>,
                                        caf::replies_to<warm_up_atom>::with<warm_up_reply>>;

/// Every full-block hash the prefix cache holds.
struct cached_blocks {
  std::vector<block_hash> hashes;
};

/// full_report_atom: every hash cached now; the delta since the last grant is dropped
/// (the full report that follows covers it).
using kv_allocator_actor = caf::typed_actor<caf::replies_to<grant_atom, kv_request>::with<kv_reply>,
                                            caf::replies_to<full_report_atom>::with<cached_blocks>>;

using request_actor = caf::typed_actor<caf::reacts_to<token_atom, token_message>,
                                       caf::reacts_to<finished_atom, seq_event>,
                                       caf::reacts_to<cancel_atom>>;

using scheduler_actor = caf::typed_actor<caf::reacts_to<submit_atom, seq_request, request_context>,
                                         caf::reacts_to<submit_all_atom, std::vector<queued_request>>,
                                         caf::reacts_to<cancel_atom, seq_id>,
                                         caf::reacts_to<finish_atom, seq_id, seq_event>,
                                         caf::reacts_to<step_atom>,
                                         caf::reacts_to<drain_atom>,
                                         caf::reacts_to<abort_atom>,
                                         caf::reacts_to<full_report_atom>>;

}  // namespace inflight

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(inflight::step_plan)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(inflight::step_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(inflight::draft_plan)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(inflight::draft_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(inflight::warm_up_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(inflight::kv_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(inflight::kv_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(inflight::token_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(inflight::seq_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(inflight::seq_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(inflight::request_context)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<inflight::queued_request>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(inflight::cached_blocks)

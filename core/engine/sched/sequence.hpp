#pragma once
/// One request's state inside the scheduler. There is no prefill or decode phase:
/// num_computed_tokens catches up with num_tokens() (prompt + generated) under the
/// step's token budget; a decode is simply a sequence one token behind.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/types.hpp"
#include "core/engine/kv/block_hash.hpp"
#include "core/engine/request/sampling_params.hpp"
#include "core/engine/request/slo_targets.hpp"
#include "core/engine/spec/spec_config.hpp"
#include "core/grammar/matcher.hpp"
#include "core/model/pooling.hpp"

namespace inflight {

struct lora_adapter;  // core/model/lora.hpp

enum class seq_status { waiting, running, preempted, finished };

enum class finish_reason {
  stop,       ///< a stop token was sampled, the grammar is complete (or the request actor matched a stop string)
  length,     ///< max_tokens reached or the context is full
  cancelled,  ///< the client went away or asked to cancel
  aborted,    ///< the engine gave up on it (shutdown, deadline)
  error,      ///< the backend failed on its step
};

const char* to_string(seq_status status);
/// The one finish vocabulary every client sees (HTTP finish_reason, the WebSocket `done`
/// message, /v1/engine/events' finished[].reason, `inflight simulate`'s records): "stop",
/// "length", "cancelled", "abort" (aborted) or "error". A chat whose output parsed as tool calls says
/// tool_calls_finish_name instead of the engine's reason (table: docs/http-api.md).
const char* finish_name(finish_reason reason);
inline constexpr const char* tool_calls_finish_name = "tool_calls";
/// The `finished_reason` label of request_success_total (vLLM's): cancelled and aborted
/// are both "abort".
const char* metrics_label(finish_reason reason);

/// What a caller submits.
struct seq_request {
  seq_id id = 0;
  std::vector<token_id> prompt;
  sampling_params params;
  int priority = 0;  ///< larger = more important
  /// Prefix-cache salt: requests with different salts never share cached blocks.
  std::string cache_salt;
  /// The LoRA adapter it runs with (null: the base model); the sequence holds it until it
  /// finishes. The salt must name it too (the engine adds it), so that adapters never
  /// share cached blocks.
  std::shared_ptr<const lora_adapter> adapter;
  /// Prefill-only scoring when not empty: no token is generated; the sequence finishes
  /// when its prompt is computed, with the logits of these vocabulary rows.
  std::vector<token_id> score_rows{};
  /// Prefill-only embedding when set: no token is generated; the sequence finishes when
  /// its prompt is computed, with its final hidden states pooled this way
  /// (seq_event::embedding). Mean and first pooling never use the prefix cache.
  std::optional<pooling_kind> pooling{};
  /// The client's sampling seed (reproducible draws); none = the scheduler derives one
  /// per sequence. The scheduler resolves it once into sequence::seed.
  std::optional<std::uint64_t> seed;
  /// Latency targets for an SLO-aware policy; 0 = the deployment's default
  /// (scheduler_config::default_targets).
  slo_targets targets{};
  /// When the request arrived, on the scheduler's clock: the edge's stamp, so that its
  /// timings include the way in. None: when it is submitted.
  std::optional<double> arrival{};
  /// The request's deadline, in seconds after its arrival (server.request_timeout_s):
  /// past it the step loop finishes it aborted with errc::timeout. 0 = none.
  double timeout_s = 0.0;
  /// Speculative decoding: the drafter and draft length this request wants, where they
  /// differ from the deployment's ([speculative]); method "off" turns it off.
  speculation_choice speculation{};
};

/// Times on the scheduler's clock, in seconds.
struct seq_timestamps {
  double arrival = 0.0;
  std::optional<double> first_scheduled;
  std::optional<double> first_token;
  std::optional<double> last_token;
  std::optional<double> finished;
};

/// A sequence's place in its reasoning phase (sampling_params::reasoning).
enum class reasoning_progress : std::uint8_t {
  none,      ///< no reasoning phase, or past it: the grammar (if any) applies
  awaiting,  ///< nothing generated yet: the first token may open the reasoning
  thinking,  ///< inside the reasoning
};

struct sequence {
  seq_id id = 0;
  std::vector<token_id> prompt;
  std::vector<token_id> generated;
  int num_computed_tokens = 0;  ///< tokens whose K/V are in the cache
  int num_blocks_held = 0;      ///< size of its block table at the last grant (0 when waiting)
  /// Waiting: its cached prefix at the last grant (what the policy plans with).
  int num_cached_hint = 0;
  /// Tokens its first admission took from the prefix cache (usage.cached_tokens).
  int num_cached_tokens = 0;
  std::string cache_salt;
  std::shared_ptr<const lora_adapter> adapter;  ///< seq_request::adapter
  int num_hashed_blocks = 0;    ///< full blocks whose hash went to the KV manager
  block_hash last_block_hash;   ///< of the last of them: the next block's parent
  seq_status status = seq_status::waiting;
  int priority = 0;
  sampling_params params;
  std::uint64_t seed = 0;       ///< the request's seed, or one the scheduler derived; fixed for life
  seq_timestamps times;
  int num_preemptions = 0;
  slo_targets targets;          ///< the request's, or the deployment's defaults
  double timeout_s = 0.0;       ///< seq_request::timeout_s: the deadline after arrival (0 = none)
  std::optional<finish_reason> finish;
  std::vector<token_id> score_rows;  ///< prefill-only scoring (seq_request::score_rows)
  std::optional<pooling_kind> pooling;  ///< prefill-only embedding (seq_request::pooling)
  /// Embedding: the hidden states pooled so far (first / last: the one state; mean: the
  /// sum of the chunks computed). Emptied by a preemption (everything is recomputed).
  std::vector<float> pooled;
  /// Constrained decoding (params.grammar set): the grammar state of the generated tokens.
  /// It takes each token where the token is appended and is never rolled back: preemption
  /// by recompute keeps the generated tokens, so it keeps its state too.
  std::optional<grammar_matcher> matcher;
  /// Where the output is in params.reasoning's phase: before it (the first token may open
  /// it), inside it (no grammar; its tokens counted against the budget), or past it.
  reasoning_progress reasoning = reasoning_progress::none;
  int num_reasoning_tokens = 0;
  /// Speculative decoding: its drafter, draft and acceptance.
  spec_state spec;

  int num_prompt_tokens() const { return static_cast<int>(prompt.size()); }
  int num_generated_tokens() const { return static_cast<int>(generated.size()); }
  int num_tokens() const { return num_prompt_tokens() + num_generated_tokens(); }
  /// Tokens still to compute: the rest of the prompt (or a recompute), or 1 for a decode.
  int num_tokens_needed() const { return num_tokens() - num_computed_tokens; }
  /// Token at position `pos` of prompt + generated.
  token_id token_at(int pos) const;
  /// prompt + generated, in order.
  std::vector<token_id> all_tokens() const;
  bool is_finished() const { return status == seq_status::finished; }
  bool is_prefill_only() const { return !score_rows.empty() || pooling.has_value(); }
  /// Whether its prompt may start from cached blocks (and publish its own).
  bool can_share_prefix() const { return !pooling || inflight::can_share_prefix(*pooling); }
};

}  // namespace inflight

#pragma once
/// The prompt-length rule, the one place it is written. The gateway checks it while it
/// parses (to name the field at fault), the engine when a request is submitted.

namespace inflight {

/// The most prompt tokens a request may have in a context of `max_context` tokens: one
/// that generates leaves room for a token of output; a prefill-only one (a score, an
/// embedding) may fill the context.
constexpr int max_prompt_tokens(int max_context, bool is_prefill_only) {
  return is_prefill_only ? max_context : max_context - 1;
}

}  // namespace inflight

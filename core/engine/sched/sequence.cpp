#include "core/engine/sched/sequence.hpp"

namespace inflight {

const char* to_string(seq_status status) {
  switch (status) {
    case seq_status::waiting: return "waiting";
    case seq_status::running: return "running";
    case seq_status::preempted: return "preempted";
    case seq_status::finished: return "finished";
  }
  return "unknown";
}

namespace {

struct finish_names {
  const char* name;           ///< what clients see: finish_reason, the step feed, simulate's records
  const char* metrics_label;  ///< request_success_total's finished_reason (vLLM's)
};

/// The one table of finish names.
finish_names names_of(finish_reason reason) {
  switch (reason) {
    case finish_reason::stop: return {"stop", "stop"};
    case finish_reason::length: return {"length", "length"};
    case finish_reason::cancelled: return {"cancelled", "abort"};
    case finish_reason::aborted: return {"abort", "abort"};
    case finish_reason::error: return {"error", "error"};
  }
  return {"error", "error"};
}

}  // namespace

const char* finish_name(finish_reason reason) { return names_of(reason).name; }

const char* metrics_label(finish_reason reason) { return names_of(reason).metrics_label; }

token_id sequence::token_at(int pos) const {
  if (pos < num_prompt_tokens()) return prompt[static_cast<std::size_t>(pos)];
  return generated[static_cast<std::size_t>(pos - num_prompt_tokens())];
}

std::vector<token_id> sequence::all_tokens() const {
  std::vector<token_id> out = prompt;
  out.insert(out.end(), generated.begin(), generated.end());
  return out;
}

}  // namespace inflight

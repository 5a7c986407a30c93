#pragma once
/// The token budget (max_num_batched_tokens) an offline policy comparison gives each
/// policy, so that `bench offline` and `simulate` compare the same configurations
/// (docs/benchmarks.md): every policy keeps the KV memory and max_num_seqs; the budget
/// differs only where a policy cannot chunk prompts.

#include <string_view>
#include <vector>

#include "core/bench/dataset.hpp"
#include "core/engine/sched/admission_gate.hpp"

namespace inflight::bench {

/// Policies that prefill every prompt whole (a longer prompt is prefilled alone over
/// several steps): static, prefill_first, orca, tgi.
bool prefills_whole_prompts(std::string_view policy);

int longest_prompt(const std::vector<bench_prompt>& prompts);

/// `budget` for a policy that chunks; for one that prefills whole prompts, at least
/// enough for a full batch (min(max_num_seqs, prompts) x the longest prompt), as a true
/// static batch admits, and as TGI's max_batch_prefill_tokens does for short prompts.
int offline_budget(std::string_view policy, int budget, int max_num_seqs, const std::vector<bench_prompt>& prompts);
/// The same from the count of prompts and the longest one's tokens (the rerank
/// workload's, whose prompts are built from text).
int offline_budget(std::string_view policy, int budget, int max_num_seqs, int num_prompts, int longest);

/// The interference workload's budget for every policy: the longest prompt plus one
/// token per decode stream (prompts tagged "decode"), so a long prompt fits one step.
int interference_budget(const std::vector<bench_prompt>& prompts);

/// Admission bounds under which every prompt of an offline run enters the waiting queue
/// at once: waiting requests and waiting prompt tokens above the workload's totals (an
/// offline run also lifts server.max_queue_time_s: nobody waits on the other end).
admission_gate::limits offline_admission(const std::vector<bench_prompt>& prompts);

}  // namespace inflight::bench

#include "core/bench/policy_budget.hpp"

#include <algorithm>

namespace inflight::bench {

bool prefills_whole_prompts(std::string_view policy) {
  return policy == "static" || policy == "prefill_first" || policy == "orca" || policy == "tgi";
}

int longest_prompt(const std::vector<bench_prompt>& prompts) {
  int n = 0;
  for (const auto& p : prompts) n = std::max(n, p.input_len);
  return n;
}

int offline_budget(std::string_view policy, int budget, int max_num_seqs, const std::vector<bench_prompt>& prompts) {
  return offline_budget(policy, budget, max_num_seqs, int(prompts.size()), longest_prompt(prompts));
}

int offline_budget(std::string_view policy, int budget, int max_num_seqs, int num_prompts, int longest) {
  if (!prefills_whole_prompts(policy)) return budget;
  return std::max(budget, std::min(max_num_seqs, num_prompts) * longest);
}

int interference_budget(const std::vector<bench_prompt>& prompts) {
  const auto streams = std::count_if(prompts.begin(), prompts.end(), [](const auto& p) { return p.tag == "decode"; });
  return longest_prompt(prompts) + int(streams);
}

admission_gate::limits offline_admission(const std::vector<bench_prompt>& prompts) {
  std::int64_t tokens = 0;
  for (const auto& p : prompts) tokens += std::max<std::int64_t>(std::int64_t(p.prompt_ids.size()), p.input_len);
  return {int(prompts.size()) + 1, tokens + 1};
}

}  // namespace inflight::bench

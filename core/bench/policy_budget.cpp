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
  if (!prefills_whole_prompts(policy)) return budget;
  const int seats = std::min<int>(max_num_seqs, int(prompts.size()));
  return std::max(budget, seats * longest_prompt(prompts));
}

int interference_budget(const std::vector<bench_prompt>& prompts) {
  const auto streams = std::count_if(prompts.begin(), prompts.end(), [](const auto& p) { return p.tag == "decode"; });
  return longest_prompt(prompts) + int(streams);
}

}  // namespace inflight::bench

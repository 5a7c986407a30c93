#include "core/engine/spec/draft_plan.hpp"

#include <chrono>

namespace inflight {

result<draft_result> run_draft_plan(const draft_plan& plan,
                                    const std::function<result<step_result>(const step_plan&)>& execute) {
  const auto start = std::chrono::steady_clock::now();
  draft_result out;
  out.tokens.resize(plan.seqs.size());
  step_plan step;
  std::vector<std::size_t> active;  // step.seqs[i] drafts for plan.seqs[active[i]]
  for (std::size_t i = 0; i < plan.seqs.size(); ++i) {
    const draft_seq& d = plan.seqs[i];
    if (d.num_draft < 1 || d.tokens.empty()) continue;
    seq_step s;
    s.id = d.id;
    s.tokens = d.tokens;
    s.start_position = d.start_position;
    s.block_table = d.block_table;
    s.do_sample = true;
    s.params.temperature = 0.0f;  // greedy: a one-token proposal (see sample_rows)
    step.seqs.push_back(std::move(s));
    active.push_back(i);
  }
  while (!step.seqs.empty()) {
    ++step.step_id;
    auto r = execute(step);
    if (!r) return make_error(r.error().code, "the draft model: " + r.error().message);
    if (r->tokens.size() != step.seqs.size())
      return make_error(errc::internal, "the draft model sampled " + std::to_string(r->tokens.size()) +
                                            " tokens for " + std::to_string(step.seqs.size()) + " sequences");
    std::size_t kept = 0;
    for (std::size_t i = 0; i < step.seqs.size(); ++i) {
      auto& drafted = out.tokens[active[i]];
      drafted.push_back(r->tokens[i].token);
      if (int(drafted.size()) >= plan.seqs[active[i]].num_draft) continue;
      seq_step& s = step.seqs[i];
      s.start_position += int(s.tokens.size());
      s.tokens.assign(1, drafted.back());
      if (kept != i) {
        step.seqs[kept] = std::move(s);
        active[kept] = active[i];
      }
      ++kept;
    }
    step.seqs.resize(kept);
    active.resize(kept);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace inflight

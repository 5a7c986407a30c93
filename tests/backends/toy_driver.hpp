#pragma once
// A minimal greedy driver over cpu_backend for tests: each sequence owns a fixed
// range of blocks, and a step schedules a chosen number of tokens per sequence.

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <vector>

#include "backends/cpu_backend.hpp"

namespace inflight::test {

struct toy_seq {
  std::vector<token_id> tokens;  // prompt, then generated
  int num_prompt = 0;
  int num_computed = 0;
  int max_new = 0;
  std::vector<block_id> blocks;
  bool is_done = false;
  int num_generated() const { return int(tokens.size()) - num_prompt; }
};

/// Greedy sampling params.
inline sampling_params greedy() {
  sampling_params p;
  p.temperature = 0.0f;
  return p;
}

/// Builds a sequence with `max_blocks` dedicated blocks starting at `first_block`.
inline toy_seq make_toy_seq(std::vector<token_id> prompt, int max_new, int first_block, int max_blocks) {
  toy_seq s;
  s.num_prompt = int(prompt.size());
  s.tokens = std::move(prompt);
  s.max_new = max_new;
  for (int i = 0; i < max_blocks; ++i) s.blocks.push_back(first_block + i);
  return s;
}

/// Runs steps until every sequence is done; `chunk(seq_index, step)` says how many
/// tokens a sequence with work left processes in a step (0 = skip this step).
inline void run_toy(cpu_backend& be, std::vector<toy_seq>& seqs, const std::function<int(int, int)>& chunk) {
  for (int step = 0; step < 100000; ++step) {
    step_plan plan;
    plan.step_id = std::uint64_t(step);
    std::vector<int> index;
    for (int i = 0; i < int(seqs.size()); ++i) {
      auto& s = seqs[i];
      if (s.is_done) continue;
      const int left = int(s.tokens.size()) - s.num_computed;
      const int n = std::min(left, chunk(i, step));
      if (n <= 0) continue;
      seq_step st;
      st.id = seq_id(i);
      st.tokens.assign(s.tokens.begin() + s.num_computed, s.tokens.begin() + s.num_computed + n);
      st.start_position = s.num_computed;
      st.block_table = s.blocks;
      st.do_sample = s.num_computed + n == int(s.tokens.size());
      st.params = greedy();
      st.sample_index = std::uint64_t(s.num_generated());
      plan.seqs.push_back(std::move(st));
      index.push_back(i);
    }
    if (plan.seqs.empty()) {
      if (std::all_of(seqs.begin(), seqs.end(), [](const toy_seq& s) { return s.is_done; })) return;
      continue;
    }
    auto result = be.execute(plan);
    REQUIRE(result.has_value());
    std::size_t k = 0;
    for (std::size_t j = 0; j < plan.seqs.size(); ++j) {
      auto& s = seqs[index[j]];
      s.num_computed += int(plan.seqs[j].tokens.size());
      if (!plan.seqs[j].do_sample) continue;
      s.tokens.push_back(result->tokens.at(k++).token);
      if (s.num_generated() >= s.max_new) s.is_done = true;
    }
  }
  FAIL("toy driver did not finish");
}

}  // namespace inflight::test

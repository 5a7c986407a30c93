#pragma once
// What the simulator's tests share: a prompt of given length, a scheduler and KV pool,
// and a run that must succeed.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/bench/sim/simulator.hpp"
#include "tests/core/engine/sched/sched_harness.hpp"

namespace inflight::test {

/// A prompt of `length` tokens from `first` on (cycling through 200 ids).
inline bench::bench_prompt sim_prompt(int length, int output_len, double arrival_s = 0.0, token_id first = 3) {
  bench::bench_prompt p;
  for (int i = 0; i < length; ++i) p.prompt_ids.push_back(first + i % 200);
  p.input_len = length;
  p.output_len = output_len;
  p.arrival_s = arrival_s;
  return p;
}

inline sim::sim_config sim_config(int budget, int max_num_seqs, int num_kv_blocks, int block_size = 16) {
  sim::sim_config c;
  c.scheduler.max_num_batched_tokens = budget;
  c.scheduler.max_num_seqs = max_num_seqs;
  c.num_kv_blocks = num_kv_blocks;
  c.block_size = block_size;
  return c;
}

/// One replica with `policy`; the run must succeed.
inline sim::sim_result run_sim(const std::vector<bench::bench_prompt>& prompts, const std::string& policy,
                               const sim::sim_config& c, const sim::step_cost_model& cost) {
  auto r = sim::simulate(prompts, load_policy(policy), c, cost);
  INFO((r ? std::string() : r.error().message));
  REQUIRE(r.has_value());
  return std::move(*r);
}

}  // namespace inflight::test

#include "core/engine/step/backend.hpp"

#include <algorithm>

namespace inflight {

std::vector<step_plan> warm_up_plans(const model_config& config, int num_kv_blocks, int block_size, int max_tokens) {
  // Room for the prefill and its one decode token, in the cache and in the context.
  int capacity = num_kv_blocks * block_size;
  if (config.max_seq_len > 0) capacity = std::min(capacity, config.max_seq_len);
  const int prefill = std::min(max_tokens, capacity - 1);
  if (prefill < 1 || config.vocab_size < 1) return {};
  seq_step seq;
  seq.id = 0;
  seq.do_sample = true;
  seq.params.temperature = 0.0f;
  for (int b = 0; b * block_size < prefill + 1; ++b) seq.block_table.push_back(b);
  for (int i = 0; i < prefill; ++i) seq.tokens.push_back(token_id(i % config.vocab_size));
  std::vector<step_plan> plans(2);
  plans[0].seqs.push_back(seq);
  seq.start_position = prefill;
  seq.tokens = {0};
  seq.sample_index = 1;
  plans[1].step_id = 1;
  plans[1].seqs.push_back(std::move(seq));
  return plans;
}

result<void> backend::warm_up() {
  for (const auto& plan : warm_up_plans(config(), num_kv_blocks(), block_size())) {
    auto r = execute(plan);
    if (!r) return std::unexpected(r.error());
  }
  return {};
}

}  // namespace inflight

#pragma once
/// A step plan reduced to its sizes (no token ids, no block tables): what a step-cost
/// model needs to say how long the step takes.

#include <vector>

#include "core/engine/step/step_plan.hpp"

namespace inflight {

/// The size of one scheduled sequence in a step.
struct seq_extent {
  int num_tokens = 0;          ///< tokens processed (1 for a decode)
  int num_context_tokens = 0;  ///< tokens its attention reads: start_position + num_tokens
};

struct step_shape {
  std::vector<seq_extent> seqs;

  int num_seqs() const { return static_cast<int>(seqs.size()); }
  int num_tokens() const {
    int n = 0;
    for (const auto& s : seqs) n += s.num_tokens;
    return n;
  }
};

inline step_shape shape_of(const step_plan& plan) {
  step_shape shape;
  shape.seqs.reserve(plan.seqs.size());
  for (const auto& s : plan.seqs) {
    const int n = static_cast<int>(s.tokens.size());
    shape.seqs.push_back({n, s.start_position + n});
  }
  return shape;
}

}  // namespace inflight

#pragma once
/// The backend interface: runs one step plan (embeddings, layers, final norm, logits
/// for the sampled positions, sampling) and owns the KV memory. Implemented in
/// actors/backend/ over kernels/cpu and kernels/cuda.

#include <string>

#include "core/error.hpp"
#include "core/model/model_config.hpp"
#include "core/sched/step_plan.hpp"

namespace inflight {

class backend {
 public:
  virtual ~backend() = default;
  virtual result<step_result> execute(const step_plan& plan) = 0;
  virtual const model_config& config() const = 0;
  virtual int num_kv_blocks() const = 0;
  virtual int block_size() const = 0;
  virtual std::string name() const = 0;
};

}  // namespace inflight

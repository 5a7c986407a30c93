#pragma once
/// The backend interface: runs one step plan (embeddings, layers, final norm, logits
/// for the sampled positions, sampling) and owns the KV memory. Implemented in
/// backends/ over kernels/cpu and kernels/cuda.

#include <memory>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/engine/step/step_plan.hpp"
#include "core/model/lora.hpp"
#include "core/model/model_config.hpp"

namespace inflight {

class backend {
 public:
  virtual ~backend() = default;
  virtual result<step_result> execute(const step_plan& plan) = 0;
  virtual const model_config& config() const = 0;
  virtual int num_kv_blocks() const = 0;
  virtual int block_size() const = 0;
  virtual std::string name() const = 0;

  /// Runs a short prefill and one decode step on scratch KV blocks before anything is
  /// served, so that the first request does not pay for first-touched memory, thread
  /// start-up and library initialisation (about 50-150 ms on the CPU). Call it from the
  /// thread that will run the steps (the executor's), with every KV block still free:
  /// it overwrites the first blocks. An error means the backend cannot run a step.
  virtual result<void> warm_up();

  /// Whether steps may carry LoRA adapters (step_plan::adapters). A backend that does not
  /// run them refuses such a step; the engine refuses adapters for it up front.
  virtual bool runs_adapters() const { return false; }
};

/// The warm-up's steps: a prefill of up to `max_tokens` tokens, then one decode step,
/// both sampling greedily from sequence 0 in blocks 0, 1, ... (fewer tokens when the
/// cache or the context is smaller).
std::vector<step_plan> warm_up_plans(const model_config& config, int num_kv_blocks, int block_size,
                                     int max_tokens = 16);

}  // namespace inflight

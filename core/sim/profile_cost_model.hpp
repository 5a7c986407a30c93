#pragma once
/// The `profile` step-cost model: step times from a measured profile's fit
/// (step_profile.hpp, written by `inflight bench profile`), plus a fixed time per step
/// for the engine's work outside the backend (scheduling, applying the step, sending
/// tokens), which the profile, timing the backend alone, does not hold.

#include <string>

#include "core/sim/cost_model.hpp"
#include "core/sim/step_profile.hpp"

namespace inflight::sim {

class profile_cost_model final : public step_cost_model {
 public:
  /// Refuses a negative or non-finite engine overhead.
  static result<profile_cost_model> try_create(step_profile profile, double engine_overhead_s);

  double step_seconds(const step_shape& shape) const override {
    return profile_.fit.predict(shape) + engine_overhead_s_;
  }
  std::string describe() const override;

  const step_profile& profile() const { return profile_; }

 private:
  profile_cost_model() = default;

  step_profile profile_;
  double engine_overhead_s_ = 0.0;
};

}  // namespace inflight::sim

#pragma once
/// The `profile` step-cost model: step times from a measured profile's fit
/// (step_profile.hpp, written by `inflight bench profile`), plus a fixed time per step
/// for the engine's work outside the backend (scheduling, applying the step, sending
/// tokens), which the profile, timing the backend alone, does not hold.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/bench/sim/cost_model.hpp"
#include "core/bench/sim/step_profile.hpp"

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

namespace inflight::sim {

/// The `replay` step-cost model: the steps one engine run recorded (`bench offline
/// --record-steps`, one policy), given back in their order. It separates what the
/// simulator does (the schedule, the clock) from what a cost model guesses: run the same
/// requests again with the engine's own step times.
///
/// The k-th simulated step takes the time of a recorded step:
///   1. near the k-th (within `window` either way, each used once) of the same shape;
///   2. else, of all the recorded steps with as many sequences and tokens, the one whose
///      contexts sum closest (then the nearest to k), with the fit's difference for the
///      contexts added;
///   3. else the recorded step near the k-th that the fit rates closest, scaled by the
///      fit's ratio of the two shapes (the fit alone past the recording's end).
/// Where requests arrive at set times, an arrival can fall one step earlier or later
/// than in the engine: steps trade places, and the sequences it touches read one position
/// more or less from then on, or share steps otherwise. Exact steps and the others are
/// counted. A recording holds each step from its plan to its applied result; the
/// engine's time between steps (routing the tokens, opening the next step) is not in it:
/// `engine_overhead_s`, added to every step, gives it back (bench/sim_validate.py
/// --replay measures it per run: the run's duration less its steps, per step).
class replay_cost_model final : public step_cost_model {
 public:
  static constexpr std::size_t window = 3;

  /// Refuses a profile that is not a recording of engine steps, and a negative overhead.
  static result<replay_cost_model> try_create(step_profile recording, double engine_overhead_s = 0.0);

  /// Not thread-safe: one simulated run at a time, from its first step (restart() between).
  double step_seconds(const step_shape& shape) const override;
  std::string describe() const override;

  void restart() const;
  /// Steps that took a recorded step of their own shape.
  std::size_t num_replayed() const { return num_replayed_; }
  /// Steps that took a recorded step of another shape, scaled by the fit (or the fit
  /// alone, past the recording's end).
  std::size_t num_differing() const { return num_differing_; }
  std::size_t num_recorded() const { return recording_.samples.size(); }

 private:
  replay_cost_model() = default;

  step_profile recording_;
  std::vector<double> predicted_;  ///< the fit's time of each recorded step
  /// Recorded steps by (sequences, tokens): their indices.
  std::map<std::pair<int, int>, std::vector<std::size_t>> by_size_;
  double engine_overhead_s_ = 0.0;
  mutable std::vector<bool> is_used_;
  mutable std::size_t next_ = 0, num_replayed_ = 0, num_differing_ = 0;
};

}  // namespace inflight::sim

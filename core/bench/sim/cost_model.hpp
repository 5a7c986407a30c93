#pragma once
/// How long one engine step takes on a modelled device: the simulator's clock advances
/// by this for every step it runs. A model sees only the step's sizes (step_shape), so a
/// measured one (profile_cost_model.hpp: a fit of step times from `inflight bench
/// profile`) takes the roofline's place behind the same interface.
///
/// roofline: a step reads every weight once and the K/V of every scheduled sequence's
/// context, and does 2 FLOPs per parameter per token plus attention's:
///
///   bytes   = weight_bytes + sum over seqs (context x kv_bytes_per_token)
///   flops   = 2 x params x tokens + sum over seqs 4 x layers x heads x head_dim x
///             (n x start + n (n + 1) / 2)      (QK^T and AV; n new tokens after `start`)
///   seconds = max(bytes / (bandwidth x bandwidth_efficiency),
///                 flops / (peak x compute_efficiency)) + step_overhead
///
/// The byte and FLOP counts are `inflight plan`'s (core/bench/capacity_plan.hpp).

#include <string>

#include "core/base/error.hpp"
#include "core/bench/capacity_plan.hpp"
#include "core/engine/step/step_shape.hpp"
#include "core/model/model_config.hpp"

namespace inflight::sim {

class step_cost_model {
 public:
  virtual ~step_cost_model() = default;
  /// Seconds the step of this shape takes (finite, >= 0).
  virtual double step_seconds(const step_shape& shape) const = 0;
  /// One line for reports: the model and its parameters.
  virtual std::string describe() const = 0;
};

/// Every step takes the same time, whatever it holds (tests, back-of-envelope runs).
class constant_cost_model final : public step_cost_model {
 public:
  explicit constant_cost_model(double seconds) : seconds_(seconds) {}
  double step_seconds(const step_shape&) const override { return seconds_; }
  std::string describe() const override;

 private:
  double seconds_;
};

/// The roofline's tunables; the defaults are round figures for a well-tuned engine on a
/// datacenter GPU, not measurements of inflight.
struct roofline_options {
  double bandwidth_efficiency = 0.75;  ///< share of datasheet bandwidth a decode step reaches
  double compute_efficiency = 0.5;     ///< share of datasheet FLOP/s a prefill step reaches (MFU)
  double step_overhead_s = 0.001;      ///< per step: scheduling, launches, sampling
  double weight_value_bytes = 2.0;     ///< bytes per weight (bf16)
  int kv_value_bytes = 2;              ///< bytes per KV element (bf16)
};

/// One step's cost and where it came from.
struct roofline_cost {
  double bytes = 0.0;
  double flops = 0.0;
  double memory_s = 0.0;   ///< bytes / effective bandwidth
  double compute_s = 0.0;  ///< flops / effective FLOP/s
  double seconds = 0.0;    ///< max of both + overhead
};

class roofline_cost_model final : public step_cost_model {
 public:
  /// Refuses an incomplete shape, a non-positive figure and efficiencies outside (0, 1].
  static result<roofline_cost_model> try_create(const model_config& model, const bench::hardware_spec& hardware,
                                                const roofline_options& options);

  roofline_cost cost_of(const step_shape& shape) const;
  double step_seconds(const step_shape& shape) const override { return cost_of(shape).seconds; }
  std::string describe() const override;

  double weight_bytes() const { return weight_bytes_; }
  double kv_bytes_per_token() const { return kv_bytes_per_token_; }

 private:
  roofline_cost_model() = default;

  double num_parameters_ = 0.0;
  double weight_bytes_ = 0.0;
  double kv_bytes_per_token_ = 0.0;
  double attention_flops_per_pair_ = 0.0;  ///< 4 x layers x heads x head_dim: one (query, key) pair
  double bandwidth_ = 0.0;                 ///< effective bytes / s
  double flops_ = 0.0;                     ///< effective FLOP / s
  roofline_options options_;
  bench::hardware_spec hardware_;
};

}  // namespace inflight::sim

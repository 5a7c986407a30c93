#pragma once
/// A measured step-time profile (`inflight bench profile`): step times of one model on one
/// device and backend over a grid of step shapes, and a fit of them that predicts the time
/// of any step shape. The simulator's `profile` cost model (profile_cost_model.hpp) reads it.
///
/// Each grid point is one step: `prefill_seqs` sequences of `prefill_tokens` tokens each
/// from position 0 (0 = none) beside `decode_seqs` decode sequences of `context` tokens
/// each. Several short prefills in one step tell the GEMM work (tokens) apart from the
/// attention work (which grows with the square of a prompt's length). The fit is
/// linear in six kinds of work, with the GEMM term piecewise linear in the step's tokens:
///
///   seconds = fixed + per_token x T + sum_k per_token_above[k] x max(0, T - knot[k])
///           + per_seq x S + per_kv_token x C + per_attention_pair x A
///
///   T = tokens of the step (every matrix product runs over them)
///   S = sequences of the step (one row of logits and one sampling each)
///   C = sum over sequences of its context: K/V positions read (the whole of a decode's
///       attention, which reads each once)
///   A = sum over sequences of n x start + n (n + 1) / 2: (query, key) pairs of attention
///       (n new tokens after `start` cached ones; the compute of a prefill's attention)
///
/// fitted by least squares weighted by 1 / seconds (relative error counts, so the short
/// decode steps weigh as much as the long prefills).

#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/engine/step/step_shape.hpp"

namespace inflight::sim {

/// One timed point of the grid, or one step recorded inside the engine.
struct profile_sample {
  int prefill_tokens = 0;  ///< tokens of each prefilling sequence (from position 0; 0 = none)
  int prefill_seqs = 1;    ///< prefilling sequences (when prefill_tokens > 0)
  int decode_seqs = 0;     ///< decode sequences beside it
  int context = 0;         ///< context of each decode sequence (its new token included)
  double seconds = 0.0;    ///< the step's time (median of the repeats)
  /// A recorded step's own shape (source "engine"): when set, the grid fields above are
  /// unused (0).
  std::vector<seq_extent> seqs{};
  /// A recorded step's start, seconds on the engine's clock (< 0: not recorded): what
  /// tells the engine's time between its steps.
  double start_s = -1.0;
};

/// The step shape of a sample: its recorded shape, or the grid point's.
step_shape sample_shape(const profile_sample& s);

/// The coefficients of the fit (seconds, per unit of work).
struct profile_fit {
  std::vector<int> knots;  ///< token counts where the per-token slope changes (ascending)
  double fixed_s = 0.0;
  double per_token_s = 0.0;
  std::vector<double> per_token_above_s;  ///< one per knot
  double per_seq_s = 0.0;
  double per_kv_token_s = 0.0;
  double per_attention_pair_s = 0.0;
  double mean_relative_error = 0.0;  ///< over the samples fitted
  double max_relative_error = 0.0;
  /// Coefficients held at 0: those the samples did not determine (fit_profile's
  /// pin_undetermined: their work did not vary apart from the others' in these steps),
  /// and those fitted below 0 (named "... (fitted below 0)"), as more work never takes
  /// less time.
  std::vector<std::string> pinned;

  /// The fit's step time, never below 0. A token segment whose fitted slope is negative
  /// (noise, or fewer samples above a knot) counts as flat: beyond the grid a negative
  /// slope would make the largest steps the cheapest.
  double predict(const step_shape& shape) const;
};

/// Where and how the profile was measured.
struct profile_origin {
  std::string device;        ///< e.g. "cpu: Intel(R) Xeon(R) ..."
  std::string backend;       ///< e.g. "cpu (avx512 kernels)"
  int threads = 0;           ///< compute threads
  std::string model;         ///< a named shape (bench-20M) or the model's path
  std::string weight_dtype;  ///< e.g. "f32"
  std::string kv_dtype;      ///< e.g. "f32"
  std::string measured_at;   ///< UTC, ISO 8601
  int repeats = 0;           ///< timed repeats per grid point
  /// "grid": backend steps timed alone over a grid (`bench profile`); "engine": steps
  /// recorded inside the running engine (`bench offline --record-steps`), from plan to
  /// applied result, so the engine's own time per step is in them.
  std::string source = "grid";
};

struct step_profile {
  profile_origin origin;
  std::vector<profile_sample> samples;
  profile_fit fit;
};

/// Fits the model above to `samples` with the slope changing at `knots`. An error when a
/// sample is not a step (no tokens, a time <= 0) or the samples do not determine every
/// coefficient (too few, or no variation in one kind of work); with `pin_undetermined`,
/// such a coefficient (never the fixed time) is held at 0 and named in `pinned` instead:
/// for steps recorded in an engine, which vary only as its workload makes them.
result<profile_fit> fit_profile(const std::vector<profile_sample>& samples, const std::vector<int>& knots,
                                bool pin_undetermined = false);

/// The profile as JSON text (format "inflight-step-profile", version 1).
std::string to_json_text(const step_profile& profile);

/// Parses JSON text written by to_json_text; a clear error for anything else.
result<step_profile> parse_step_profile(const std::string& text);

/// Reads and parses a profile file; the error names the path.
result<step_profile> load_step_profile(const std::string& path);

}  // namespace inflight::sim

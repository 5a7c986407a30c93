#pragma once
/// What a step costs, learned from the steps themselves: a least-squares fit
/// t = t0 + c_prompt P + c_decode N + c_draft D through recent steps, older ones fading, where
/// P counts the rows that are not sampled (prompt chunks), N the sampled rows of the step
/// without its drafts (decodes, a prompt's last row) and D the drafted rows checked beside
/// the decodes. Each kind costs its own: a prompt row goes through the layers in a batch,
/// a decode also has its logits and its own attention over its whole context, a drafted
/// row its logits, one more query row over that context, and the engine's work on its
/// token. The budget rule of speculative decoding prices a drafted row at c_draft against
/// the step's t: a large model on a CPU reads its weights once per step whatever the rows
/// (rows cheap beside t0: drafts pay), a tiny one pays per row (they never do).
///
/// A slope is fitted while its kind varies in the recent steps apart from the others;
/// while it does not, the last one learned for it stands. c_decode is known once decodes
/// have varied (streams come and go; until then their part of a step is in t0), c_draft
/// once drafts have (until then a drafted row is priced as a decode); before either there
/// is no cost (the scheduler uses its configured estimate).

#include <array>
#include <optional>

namespace inflight {

struct step_cost {
  double fixed_seconds = 0.0;        ///< t0: reading the weights, launching the step
  double prompt_row_seconds = 0.0;   ///< c_prompt: a row that is not sampled
  double decode_row_seconds = 0.0;   ///< c_decode: a sampled row (a decode)
  double draft_row_seconds = 0.0;    ///< c_draft: a drafted row checked beside a decode

  /// What a step of `prompt_rows`, `decode_rows` and `draft_rows` takes.
  double seconds(double prompt_rows, double decode_rows, double draft_rows) const {
    return fixed_seconds + prompt_row_seconds * prompt_rows + decode_row_seconds * decode_rows +
           draft_row_seconds * draft_rows;
  }
};

class step_cost_fit {
 public:
  /// A step of these rows took `seconds` (0 = not measured: ignored).
  void add(int prompt_rows, int decode_rows, int draft_rows, double seconds);
  /// The costs, once the decodes or the drafts of the steps seen have varied enough to tell.
  std::optional<step_cost> cost() const { return cost_; }

 private:
  static constexpr int num_kinds = 3;  ///< prompt, decode, draft rows
  static constexpr double decay = 0.99;  ///< each step's weight fades by this per later step
  void refit();

  double w_ = 0.0, t_ = 0.0;
  std::array<double, num_kinds> x_{}, xt_{};  ///< decayed sums of each kind's rows, and of rows * t
  std::array<std::array<double, num_kinds>, num_kinds> xx_{};
  std::array<std::optional<double>, num_kinds> slope_{};  ///< the last learned per kind
  std::optional<step_cost> cost_;
};

}  // namespace inflight

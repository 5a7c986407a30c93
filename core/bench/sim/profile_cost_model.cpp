#include "core/bench/sim/profile_cost_model.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>

namespace inflight::sim {

result<profile_cost_model> profile_cost_model::try_create(step_profile profile, double engine_overhead_s) {
  if (!(engine_overhead_s >= 0.0) || !std::isfinite(engine_overhead_s))
    return make_error(errc::invalid_argument, "profile: the engine overhead must be a number >= 0");
  profile_cost_model m;
  m.profile_ = std::move(profile);
  m.engine_overhead_s_ = engine_overhead_s;
  return m;
}

std::string profile_cost_model::describe() const {
  const auto& o = profile_.origin;
  const auto& f = profile_.fit;
  char line[512];
  std::snprintf(line, sizeof line,
                "profile: %s on %s, %s, %d threads, measured %s; %.3f ms + %.4f ms/token + %.4f ms/seq + %.3g ms/KV token + %.3g ms/pair "
                "(fit error mean %.1f%%, max %.1f%%) + %.3f ms engine overhead per step",
                o.model.c_str(), o.device.c_str(), o.backend.c_str(), o.threads, o.measured_at.c_str(), f.fixed_s * 1e3,
                f.per_token_s * 1e3, f.per_seq_s * 1e3, f.per_kv_token_s * 1e3, f.per_attention_pair_s * 1e3, 100.0 * f.mean_relative_error,
                100.0 * f.max_relative_error, engine_overhead_s_ * 1e3);
  return line;
}

}  // namespace inflight::sim

namespace inflight::sim {

result<replay_cost_model> replay_cost_model::try_create(step_profile recording, double engine_overhead_s) {
  if (recording.origin.source != "engine" || recording.samples.empty())
    return make_error(errc::invalid_argument, "replay: the profile must hold steps recorded in the engine "
                                              "(bench offline --record-steps)");
  if (!(engine_overhead_s >= 0.0) || !std::isfinite(engine_overhead_s))
    return make_error(errc::invalid_argument, "replay: the engine overhead must be a number >= 0");
  replay_cost_model m;
  m.engine_overhead_s_ = engine_overhead_s;
  for (std::size_t k = 0; k < recording.samples.size(); ++k) {
    const auto shape = sample_shape(recording.samples[k]);
    m.predicted_.push_back(recording.fit.predict(shape));
    m.by_size_[{shape.num_seqs(), shape.num_tokens()}].push_back(k);
  }
  m.recording_ = std::move(recording);
  m.restart();
  return m;
}

void replay_cost_model::restart() const {
  next_ = num_replayed_ = num_differing_ = 0;
  is_used_.assign(recording_.samples.size(), false);
}

namespace {

long long context_sum(const step_shape& s) {
  long long n = 0;
  for (const auto& q : s.seqs) n += q.num_context_tokens;
  return n;
}

bool same_shape(const step_shape& a, const step_shape& b) {
  return a.seqs.size() == b.seqs.size() &&
         std::equal(a.seqs.begin(), a.seqs.end(), b.seqs.begin(), [](const seq_extent& x, const seq_extent& y) {
           return x.num_tokens == y.num_tokens && x.num_context_tokens == y.num_context_tokens;
         });
}

}  // namespace

double replay_cost_model::step_seconds(const step_shape& shape) const {
  const std::size_t k = next_++;
  const auto& samples = recording_.samples;
  const double predicted = recording_.fit.predict(shape);
  // The unused recorded steps near the k-th: k first, then k+1, k-1, k+2, ...
  std::size_t best = samples.size();
  double best_distance = INFINITY;
  for (std::size_t d = 0; d <= 2 * window; ++d) {
    const long long j = (long long)k + (d % 2 == 0 ? (long long)(d / 2) : -(long long)((d + 1) / 2));
    if (j < 0 || j >= (long long)samples.size() || is_used_[std::size_t(j)]) continue;
    const auto& s = samples[std::size_t(j)];
    if (same_shape(sample_shape(s), shape)) {
      is_used_[std::size_t(j)] = true;
      ++num_replayed_;
      return s.seconds + engine_overhead_s_;
    }
    const double distance = std::abs(std::log(std::max(predicted, 1e-12) / std::max(predicted_[std::size_t(j)], 1e-12)));
    if (distance < best_distance) {
      best_distance = distance;
      best = std::size_t(j);
    }
  }
  ++num_differing_;
  // A recorded step of as many sequences and tokens: its time, the fit's difference for
  // the contexts added (never below half its time).
  if (auto it = by_size_.find({shape.num_seqs(), shape.num_tokens()}); it != by_size_.end()) {
    const long long context = context_sum(shape);
    std::size_t nearest = it->second.front();
    std::pair<long long, long long> nearest_key{LLONG_MAX, LLONG_MAX};
    for (std::size_t j : it->second) {
      const std::pair<long long, long long> key{std::llabs(context_sum(sample_shape(samples[j])) - context),
                                                std::llabs((long long)j - (long long)k)};
      if (key < nearest_key) {
        nearest_key = key;
        nearest = j;
      }
    }
    const double seconds = samples[nearest].seconds;
    return std::max(0.5 * seconds, seconds + predicted - predicted_[nearest]) + engine_overhead_s_;
  }
  if (best == samples.size()) return predicted + engine_overhead_s_;  // past the recording
  is_used_[best] = true;
  return samples[best].seconds * (predicted_[best] > 0.0 ? predicted / predicted_[best] : 1.0) + engine_overhead_s_;
}

std::string replay_cost_model::describe() const {
  const auto& o = recording_.origin;
  char line[512];
  std::snprintf(line, sizeof line,
                "replay: %zu steps recorded in the engine (%s on %s, %s, %d threads, %s) + %.3f ms engine overhead "
                "per step",
                recording_.samples.size(), o.model.c_str(), o.device.c_str(), o.backend.c_str(), o.threads,
                o.measured_at.c_str(), engine_overhead_s_ * 1e3);
  return line;
}

}  // namespace inflight::sim

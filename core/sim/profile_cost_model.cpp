#include "core/sim/profile_cost_model.hpp"

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

#include "core/bench/arrival.hpp"

#include <cmath>
#include <string>

namespace inflight::bench {

result<std::vector<double>> arrival_times(int num_requests, const arrival_options& o, std::mt19937_64& rng) {
  if (num_requests < 0) return make_error(errc::invalid_argument, "the number of requests must not be negative");
  if (!(o.request_rate > 0.0)) return make_error(errc::invalid_argument, "the request rate must be positive (or inf)");
  if (!(o.burstiness > 0.0) || !std::isfinite(o.burstiness)) {
    return make_error(errc::invalid_argument, "burstiness must be a positive number");
  }
  std::vector<double> times(std::size_t(num_requests), 0.0);
  if (std::isinf(o.request_rate)) return times;
  // Gamma(shape k, scale theta): mean k theta = 1 / rate, variance k theta^2.
  std::gamma_distribution<double> gap(o.burstiness, 1.0 / (o.request_rate * o.burstiness));
  double t = 0.0;
  for (int i = 0; i < num_requests; ++i) {
    times[std::size_t(i)] = t;
    t += gap(rng);
  }
  return times;
}

}  // namespace inflight::bench

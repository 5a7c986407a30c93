#pragma once
/// When a serving benchmark sends its requests: gamma-distributed gaps with mean
/// 1 / rate and shape `burstiness` (1 = a Poisson process; below 1 burstier, above 1
/// more regular), as `vllm bench serve` does. An infinite rate sends all at t = 0.

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/base/error.hpp"

namespace inflight::bench {

struct arrival_options {
  double request_rate = std::numeric_limits<double>::infinity();  ///< requests per second
  double burstiness = 1.0;  ///< gamma shape; coefficient of variation of the gaps = 1 / sqrt(burstiness)
};

/// Send times (seconds from the start) of `num_requests` requests; the first is at 0.
result<std::vector<double>> arrival_times(int num_requests, const arrival_options& options, std::mt19937_64& rng);

}  // namespace inflight::bench

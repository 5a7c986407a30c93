#include "core/engine/sampling/rng.hpp"

#include <chrono>
#include <random>

namespace inflight {

std::uint64_t make_random_seed() {
  try {
    std::random_device device;
    const auto high = static_cast<std::uint64_t>(device());
    const auto low = static_cast<std::uint64_t>(device());
    return (high << 32) ^ low;
  } catch (const std::exception&) {
    // No entropy source: the clock still gives distinct seeds to distinct requests.
    const auto ticks = std::chrono::high_resolution_clock::now().time_since_epoch().count();
    return mix64(static_cast<std::uint64_t>(ticks));
  }
}

}  // namespace inflight

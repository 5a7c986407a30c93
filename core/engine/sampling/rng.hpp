#pragma once
/// Counter-based random numbers for sampling: the draw for a request is a pure function
/// of (seed, sample_index), so a seeded request gets the same tokens whatever it was
/// batched with, and whichever step or thread sampled it.

#include <cstdint>

namespace inflight {

/// The splitmix64 finaliser: a bijective 64-bit mix with full avalanche.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A stream of random numbers keyed by (seed, sample_index). Two generators built from
/// the same pair produce the same sequence; nothing is carried between samples.
class counter_rng {
 public:
  constexpr counter_rng(std::uint64_t seed, std::uint64_t sample_index)
      // Mixing the seed first keeps seeds that differ by a multiple of the stream
      // increment from sharing outputs at shifted indices.
      : key_(mix64(mix64(seed ^ 0x6a09e667f3bcc909ULL) + sample_index * golden_gamma)) {}

  /// The next 64 random bits of this (seed, sample_index) stream.
  constexpr std::uint64_t next_u64() {
    counter_ += 1;
    return mix64(key_ + counter_ * golden_gamma);
  }

  /// A uniform double in [0, 1) with 53 random bits.
  constexpr double next_unit() {
    return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
  }

 private:
  static constexpr std::uint64_t golden_gamma = 0x9e3779b97f4a7c15ULL;
  std::uint64_t key_;
  std::uint64_t counter_ = 0;
};

/// A fresh seed from std::random_device, for requests that set no seed: the caller
/// draws it once per request so all of that request's samples share one stream.
std::uint64_t make_random_seed();

}  // namespace inflight

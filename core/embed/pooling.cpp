#include "core/embed/pooling.hpp"

#include <algorithm>
#include <cmath>

namespace inflight {

const char* to_string(pooling_kind pooling) {
  switch (pooling) {
    case pooling_kind::last: return "last";
    case pooling_kind::mean: return "mean";
    case pooling_kind::first: return "first";
  }
  return "last";
}

std::optional<pooling_kind> try_pooling_from_name(std::string_view name) {
  for (const auto p : {pooling_kind::last, pooling_kind::mean, pooling_kind::first}) {
    if (name == to_string(p)) return p;
  }
  return std::nullopt;
}

std::vector<float> finish_embedding(std::span<const float> pooled, int dimensions, bool normalize) {
  const std::size_t n = dimensions > 0 ? std::min(pooled.size(), std::size_t(dimensions)) : pooled.size();
  std::vector<float> out(pooled.begin(), pooled.begin() + std::ptrdiff_t(n));
  if (!normalize) return out;
  double sum = 0.0;
  for (const float v : out) sum += double(v) * double(v);
  if (sum <= 0.0) return out;
  const double scale = 1.0 / std::sqrt(sum);
  for (float& v : out) v = float(double(v) * scale);
  return out;
}

}  // namespace inflight

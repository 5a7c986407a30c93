#include "core/model/pooling.hpp"

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

model_pooling gguf_pooling(std::int64_t pooling_type, std::string source) {
  model_pooling p;
  if (pooling_type == -1) return p;  // LLAMA_POOLING_TYPE_UNSPECIFIED
  p.source = std::move(source);
  switch (pooling_type) {
    case 0: p.stated = "none"; break;
    case 1: p.stated = "mean"; p.kind = pooling_kind::mean; break;
    case 2: p.stated = "cls"; p.kind = pooling_kind::first; break;
    case 3: p.stated = "last"; p.kind = pooling_kind::last; break;
    case 4: p.stated = "rank"; break;
    default: p.stated = "pooling type " + std::to_string(pooling_type); break;
  }
  return p;
}

namespace {

std::string origin_of(pooling_kind pooling, bool is_explicit, const model_pooling& model) {
  if (is_explicit) return std::string(to_string(pooling)) + " pooling (embeddings.pooling)";
  if (model.kind) return std::string(to_string(pooling)) + " pooling (" + model.stated + " in " + model.source + ")";
  return std::string(to_string(pooling)) + " pooling (the default: the model states none)";
}

}  // namespace

result<embedding_recipe> try_resolve_embedding(std::optional<pooling_kind> pooling, std::optional<bool> normalize,
                                               const model_pooling& model) {
  if (!pooling && model.is_stated() && !model.kind) {
    return make_error(errc::unsupported,
                      "the model states \"" + model.stated + "\" pooling (" + model.source +
                          "), which the engine does not implement for embeddings (it pools last, mean or first "
                          "(cls)); set embeddings.pooling to serve this model's embeddings anyway");
  }
  embedding_recipe r;
  r.pooling = pooling.value_or(model.kind.value_or(pooling_kind::last));
  r.normalize = normalize.value_or(model.normalize.value_or(true));
  r.origin = origin_of(r.pooling, pooling.has_value(), model) + (r.normalize ? ", normalised" : ", not normalised");
  if (!normalize && model.normalize) r.origin += " (modules.json)";
  return r;
}

}  // namespace inflight

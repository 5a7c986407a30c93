#include "core/bench/sim/step_profile.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

namespace inflight::sim {
namespace {

constexpr const char* format_name = "inflight-step-profile";
constexpr int format_version = 1;

/// The work of a step: [1, T, max(0, T - knot)..., S, C, A].
std::vector<double> features(const step_shape& shape, const std::vector<int>& knots) {
  double tokens = 0.0, context = 0.0, pairs = 0.0;
  for (const auto& s : shape.seqs) {
    const double n = s.num_tokens, start = s.num_context_tokens - s.num_tokens;
    tokens += n;
    context += s.num_context_tokens;
    pairs += n * start + n * (n + 1.0) / 2.0;
  }
  std::vector<double> f = {1.0, tokens};
  for (int k : knots) f.push_back(std::max(0.0, tokens - k));
  f.push_back(double(shape.num_seqs()));
  f.push_back(context);
  f.push_back(pairs);
  return f;
}

/// Solves the square system a x = b by Gaussian elimination with partial pivoting;
/// an error (naming the unknown, whose index goes to `*failed`) when a pivot vanishes.
result<std::vector<double>> solve(std::vector<std::vector<double>> a, std::vector<double> b,
                                  const std::vector<std::string>& names, std::size_t* failed = nullptr) {
  const std::size_t n = b.size();
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < n; ++r) {
      if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
    }
    if (!(std::abs(a[pivot][col]) > 1e-9)) {
      if (failed != nullptr) *failed = col;
      return make_error(errc::invalid_argument, "profile fit: the samples do not determine the coefficient " +
                                                    names[col] + " (add grid points that vary it)");
    }
    std::swap(a[col], a[pivot]);
    std::swap(b[col], b[pivot]);
    for (std::size_t r = col + 1; r < n; ++r) {
      const double m = a[r][col] / a[col][col];
      for (std::size_t c = col; c < n; ++c) a[r][c] -= m * a[col][c];
      b[r] -= m * b[col];
    }
  }
  std::vector<double> x(n);
  for (std::size_t i = n; i-- > 0;) {
    double v = b[i];
    for (std::size_t c = i + 1; c < n; ++c) v -= a[i][c] * x[c];
    x[i] = v / a[i][i];
  }
  return x;
}

std::vector<std::string> coefficient_names(const std::vector<int>& knots) {
  std::vector<std::string> names = {"fixed_s", "per_token_s"};
  for (int k : knots) names.push_back("per_token_above_s[" + std::to_string(k) + "]");
  names.push_back("per_seq_s");
  names.push_back("per_kv_token_s");
  names.push_back("per_attention_pair_s");
  return names;
}

result<void> check_samples(const std::vector<profile_sample>& samples, const std::vector<int>& knots) {
  for (std::size_t i = 0; i < knots.size(); ++i) {
    if (knots[i] <= 0 || (i > 0 && knots[i] <= knots[i - 1]))
      return make_error(errc::invalid_argument, "profile fit: knots must be positive and ascending");
  }
  for (const auto& s : samples) {
    if (!s.seqs.empty()) {
      for (const auto& q : s.seqs) {
        if (q.num_tokens < 1 || q.num_context_tokens < q.num_tokens)
          return make_error(errc::invalid_argument,
                            "profile fit: a recorded step has a sequence without tokens or with less context than tokens");
      }
    } else if (s.prefill_tokens < 0 || s.decode_seqs < 0 || s.context < 0 || (s.decode_seqs > 0 && s.context < 1) ||
               (s.prefill_tokens > 0 && s.prefill_seqs < 1) || s.prefill_tokens + s.decode_seqs == 0) {
      return make_error(errc::invalid_argument, "profile fit: a sample is not a step (no tokens, or a context < 1)");
    }
    if (!(s.seconds > 0.0) || !std::isfinite(s.seconds))
      return make_error(errc::invalid_argument, "profile fit: a sample's time is not a positive number");
  }
  return {};
}

}  // namespace

step_shape sample_shape(const profile_sample& s) {
  if (!s.seqs.empty()) return step_shape{s.seqs};
  step_shape shape;
  if (s.prefill_tokens > 0) {
    for (int i = 0; i < s.prefill_seqs; ++i) shape.seqs.push_back({s.prefill_tokens, s.prefill_tokens});
  }
  for (int i = 0; i < s.decode_seqs; ++i) shape.seqs.push_back({1, s.context});
  return shape;
}

double profile_fit::predict(const step_shape& shape) const {
  const auto f = features(shape, knots);
  const double tokens = f[1];
  // The token term segment by segment, each slope at least 0.
  double slope = per_token_s, v = fixed_s, from = 0.0;
  for (std::size_t k = 0; k <= knots.size(); ++k) {
    const double to = k < knots.size() ? std::min(tokens, double(knots[k])) : tokens;
    if (to > from) v += std::max(0.0, slope) * (to - from);
    from = std::max(from, to);
    if (k < knots.size() && k < per_token_above_s.size()) slope += per_token_above_s[k];
  }
  const std::size_t rest = 2 + knots.size();
  v += per_seq_s * f[rest] + per_kv_token_s * f[rest + 1] + per_attention_pair_s * f[rest + 2];
  return std::max(0.0, v);
}

result<profile_fit> fit_profile(const std::vector<profile_sample>& samples, const std::vector<int>& knots,
                                bool pin_undetermined) {
  if (auto ok = check_samples(samples, knots); !ok) return std::unexpected(ok.error());
  const auto all_names = coefficient_names(knots);
  const std::size_t n = all_names.size();
  if (samples.size() < n) {
    return make_error(errc::invalid_argument, "profile fit: " + std::to_string(samples.size()) + " samples for " +
                                                  std::to_string(n) + " coefficients");
  }
  // Rows weighted by 1 / seconds; columns scaled to unit size so that the pivots compare.
  std::vector<std::vector<double>> rows;
  std::vector<double> scale(n, 0.0);
  for (const auto& s : samples) {
    auto f = features(sample_shape(s), knots);
    for (std::size_t c = 0; c < n; ++c) {
      f[c] /= s.seconds;
      scale[c] = std::max(scale[c], std::abs(f[c]));
    }
    rows.push_back(std::move(f));
  }
  for (auto& v : scale) v = v > 0.0 ? v : 1.0;
  // The coefficients solved for; with pin_undetermined, one the samples do not determine
  // leaves the system (it is 0) and the rest is solved again. A step cannot take less time
  // for more work: a time per unit of work fitted below 0 (work that varies together
  // with another's in these steps, and noise) leaves it too, the most negative first.
  // Only the slopes above the knots may be negative: they bend the per-token line.
  auto is_nonnegative = [&](std::size_t c) { return c < 2 || c >= 2 + knots.size(); };
  std::vector<std::size_t> live(n);
  for (std::size_t c = 0; c < n; ++c) live[c] = c;
  std::vector<double> x(n, 0.0);
  std::vector<std::string> pinned;
  for (;;) {
    const std::size_t m = live.size();
    std::vector<std::string> names;
    for (auto c : live) names.push_back(all_names[c]);
    std::vector<std::vector<double>> ata(m, std::vector<double>(m, 0.0));
    std::vector<double> atb(m, 0.0);
    for (const auto& f : rows) {
      for (std::size_t i = 0; i < m; ++i) {
        const double fi = f[live[i]] / scale[live[i]];
        atb[i] += fi;  // the weighted target is seconds / seconds = 1
        for (std::size_t j = 0; j < m; ++j) ata[i][j] += fi * f[live[j]] / scale[live[j]];
      }
    }
    std::size_t failed = 0;
    auto solved = solve(std::move(ata), std::move(atb), names, &failed);
    if (solved) {
      std::fill(x.begin(), x.end(), 0.0);
      for (std::size_t i = 0; i < m; ++i) x[live[i]] = (*solved)[i];
      std::optional<std::size_t> worst;
      for (std::size_t i = 0; i < m; ++i) {
        if (is_nonnegative(live[i]) && (*solved)[i] < 0.0 && (!worst || (*solved)[i] < (*solved)[*worst])) worst = i;
      }
      if (!worst) break;
      pinned.push_back(all_names[live[*worst]] + " (fitted below 0)");
      live.erase(live.begin() + std::ptrdiff_t(*worst));
      if (live.empty()) return make_error(errc::invalid_argument, "profile fit: every coefficient fitted below 0");
      continue;
    }
    if (!pin_undetermined || live[failed] == 0) return std::unexpected(solved.error());  // never the fixed time
    pinned.push_back(all_names[live[failed]]);
    live.erase(live.begin() + std::ptrdiff_t(failed));
  }
  profile_fit fit;
  fit.knots = knots;
  fit.pinned = std::move(pinned);
  for (std::size_t c = 0; c < n; ++c) x[c] /= scale[c];
  auto* xs = &x;
  fit.fixed_s = (*xs)[0];
  fit.per_token_s = (*xs)[1];
  fit.per_token_above_s.assign(xs->begin() + 2, xs->begin() + 2 + std::ptrdiff_t(knots.size()));
  fit.per_seq_s = (*xs)[2 + knots.size()];
  fit.per_kv_token_s = (*xs)[3 + knots.size()];
  fit.per_attention_pair_s = (*xs)[4 + knots.size()];
  double sum = 0.0;
  for (const auto& s : samples) {
    const double e = std::abs(fit.predict(sample_shape(s)) - s.seconds) / s.seconds;
    sum += e;
    fit.max_relative_error = std::max(fit.max_relative_error, e);
  }
  fit.mean_relative_error = sum / double(samples.size());
  return fit;
}

std::string to_json_text(const step_profile& p) {
  const auto& o = p.origin;
  nlohmann::json samples = nlohmann::json::array();
  for (const auto& s : p.samples) {
    if (!s.seqs.empty()) {  // a recorded step: [tokens, context] per sequence
      nlohmann::json seqs = nlohmann::json::array();
      for (const auto& q : s.seqs) seqs.push_back({q.num_tokens, q.num_context_tokens});
      nlohmann::json one = {{"seqs", std::move(seqs)}, {"seconds", s.seconds}};
      if (s.start_s >= 0.0) one["start_s"] = s.start_s;
      samples.push_back(std::move(one));
      continue;
    }
    samples.push_back({{"prefill_tokens", s.prefill_tokens},
                       {"prefill_seqs", s.prefill_seqs},
                       {"decode_seqs", s.decode_seqs},
                       {"context", s.context},
                       {"seconds", s.seconds}});
  }
  const auto& f = p.fit;
  nlohmann::json doc = {
      {"format", format_name},
      {"version", format_version},
      {"device", o.device},
      {"backend", o.backend},
      {"threads", o.threads},
      {"model", o.model},
      {"weight_dtype", o.weight_dtype},
      {"kv_dtype", o.kv_dtype},
      {"measured_at", o.measured_at},
      {"repeats", o.repeats},
      {"source", o.source},
      {"fit",
       {{"knots", f.knots},
        {"fixed_s", f.fixed_s},
        {"per_token_s", f.per_token_s},
        {"per_token_above_s", f.per_token_above_s},
        {"per_seq_s", f.per_seq_s},
        {"per_kv_token_s", f.per_kv_token_s},
        {"per_attention_pair_s", f.per_attention_pair_s},
        {"mean_relative_error", f.mean_relative_error},
        {"max_relative_error", f.max_relative_error},
        {"pinned", f.pinned}}},
  };
  // One line per sample: a profile of steps recorded in an engine holds thousands.
  std::string text = doc.dump(2);
  text.resize(text.size() - 2);  // "\n}": the object goes on
  text += ",\n  \"samples\": [";
  for (std::size_t i = 0; i < samples.size(); ++i) text += (i ? ",\n    " : "\n    ") + samples[i].dump();
  text += samples.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return text;
}

namespace {

/// Reads j[key] as T; an error naming the key when it is missing or of another type.
template <class T>
result<T> field(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) return make_error(errc::corrupt_file, std::string("step profile: '") + key + "' is missing");
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    return make_error(errc::corrupt_file, std::string("step profile: '") + key + "' has the wrong type");
  }
}

result<profile_origin> parse_origin(const nlohmann::json& j) {
  auto device = field<std::string>(j, "device");
  auto backend = field<std::string>(j, "backend");
  auto threads = field<int>(j, "threads");
  auto model = field<std::string>(j, "model");
  auto weight = field<std::string>(j, "weight_dtype");
  auto kv = field<std::string>(j, "kv_dtype");
  auto at = field<std::string>(j, "measured_at");
  auto repeats = field<int>(j, "repeats");
  if (!device) return std::unexpected(device.error());
  if (!backend) return std::unexpected(backend.error());
  if (!threads) return std::unexpected(threads.error());
  if (!model) return std::unexpected(model.error());
  if (!weight) return std::unexpected(weight.error());
  if (!kv) return std::unexpected(kv.error());
  if (!at) return std::unexpected(at.error());
  if (!repeats) return std::unexpected(repeats.error());
  profile_origin origin{*device, *backend, *threads, *model, *weight, *kv, *at, *repeats};
  // Written since recorded steps exist; a profile without it was measured on a grid.
  origin.source = j.value("source", std::string("grid"));
  if (origin.source != "grid" && origin.source != "engine")
    return make_error(errc::corrupt_file,
                      "step profile: 'source' is \"" + origin.source + "\", not \"grid\" or \"engine\"");
  return origin;
}

result<profile_fit> parse_fit(const nlohmann::json& doc) {
  const auto it = doc.find("fit");
  if (it == doc.end() || !it->is_object()) return make_error(errc::corrupt_file, "step profile: 'fit' is missing");
  const auto& j = *it;
  profile_fit f;
  auto knots = field<std::vector<int>>(j, "knots");
  if (!knots) return std::unexpected(knots.error());
  auto above = field<std::vector<double>>(j, "per_token_above_s");
  if (!above) return std::unexpected(above.error());
  if (above->size() != knots->size())
    return make_error(errc::corrupt_file, "step profile: 'per_token_above_s' needs one value per knot");
  f.knots = *knots;
  f.per_token_above_s = *above;
  if (j.contains("pinned")) {  // written since fits may pin coefficients
    auto pinned = field<std::vector<std::string>>(j, "pinned");
    if (!pinned) return std::unexpected(pinned.error());
    f.pinned = *pinned;
  }
  std::vector<double> values;
  for (const char* key : {"fixed_s", "per_token_s", "per_seq_s", "per_kv_token_s", "per_attention_pair_s",
                          "mean_relative_error", "max_relative_error"}) {
    auto v = field<double>(j, key);
    if (!v) return std::unexpected(v.error());
    if (!std::isfinite(*v)) return make_error(errc::corrupt_file, std::string("step profile: '") + key + "' is not finite");
    values.push_back(*v);
  }
  for (double v : f.per_token_above_s) {
    if (!std::isfinite(v)) return make_error(errc::corrupt_file, "step profile: 'per_token_above_s' is not finite");
  }
  f.fixed_s = values[0], f.per_token_s = values[1], f.per_seq_s = values[2], f.per_kv_token_s = values[3];
  f.per_attention_pair_s = values[4], f.mean_relative_error = values[5], f.max_relative_error = values[6];
  return f;
}

result<std::vector<profile_sample>> parse_samples(const nlohmann::json& doc) {
  const auto it = doc.find("samples");
  if (it == doc.end() || !it->is_array()) return make_error(errc::corrupt_file, "step profile: 'samples' is missing");
  std::vector<profile_sample> out;
  for (const auto& j : *it) {
    if (!j.is_object()) return make_error(errc::corrupt_file, "step profile: a sample is not an object");
    if (j.contains("seqs")) {  // a recorded step
      auto seqs = field<std::vector<std::pair<int, int>>>(j, "seqs");
      auto s = field<double>(j, "seconds");
      if (!seqs) return std::unexpected(seqs.error());
      if (!s) return std::unexpected(s.error());
      if (seqs->empty()) return make_error(errc::corrupt_file, "step profile: a recorded step has no sequences");
      profile_sample r;
      r.prefill_seqs = 0;
      r.seconds = *s;
      if (j.contains("start_s")) {
        auto start = field<double>(j, "start_s");
        if (!start) return std::unexpected(start.error());
        r.start_s = *start;
      }
      for (const auto& [tokens, context] : *seqs) r.seqs.push_back({tokens, context});
      out.push_back(std::move(r));
      continue;
    }
    auto p = field<int>(j, "prefill_tokens");
    auto n = field<int>(j, "prefill_seqs");
    auto d = field<int>(j, "decode_seqs");
    auto c = field<int>(j, "context");
    auto s = field<double>(j, "seconds");
    if (!p) return std::unexpected(p.error());
    if (!n) return std::unexpected(n.error());
    if (!d) return std::unexpected(d.error());
    if (!c) return std::unexpected(c.error());
    if (!s) return std::unexpected(s.error());
    out.push_back({*p, *n, *d, *c, *s});
  }
  return out;
}

}  // namespace

result<step_profile> parse_step_profile(const std::string& text) {
  const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return make_error(errc::corrupt_file, "step profile: not a JSON object");
  if (doc.value("format", std::string()) != format_name)
    return make_error(errc::corrupt_file, std::string("step profile: 'format' is not \"") + format_name + "\"");
  if (!doc.contains("version") || doc["version"] != format_version)
    return make_error(errc::unsupported, "step profile: only version " + std::to_string(format_version) + " is read");
  step_profile p;
  auto origin = parse_origin(doc);
  if (!origin) return std::unexpected(origin.error());
  auto fit = parse_fit(doc);
  if (!fit) return std::unexpected(fit.error());
  auto samples = parse_samples(doc);
  if (!samples) return std::unexpected(samples.error());
  if (auto ok = check_samples(*samples, fit->knots); !ok)
    return make_error(errc::corrupt_file, "step profile: " + ok.error().message);
  p.origin = std::move(*origin);
  p.fit = std::move(*fit);
  p.samples = std::move(*samples);
  return p;
}

result<step_profile> load_step_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(errc::io_error, "step profile: cannot open " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto p = parse_step_profile(text.str());
  if (!p) return make_error(p.error().code, path + ": " + p.error().message);
  return p;
}

}  // namespace inflight::sim

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/sim/profile_cost_model.hpp"
#include "core/sim/step_profile.hpp"

using namespace inflight;

namespace {

/// Known coefficients: 2 ms fixed, 20 us per token, a slope 10 us lower above 64 tokens and
/// 5 us higher above 256, 50 us per sequence, 30 ns per K/V position read, 2 ns per
/// attention pair.
sim::profile_fit known_fit() {
  sim::profile_fit f;
  f.knots = {64, 256};
  f.fixed_s = 2e-3;
  f.per_token_s = 20e-6;
  f.per_token_above_s = {-10e-6, 5e-6};
  f.per_seq_s = 50e-6;
  f.per_kv_token_s = 30e-9;
  f.per_attention_pair_s = 2e-9;
  return f;
}

std::vector<sim::profile_sample> grid() {
  std::vector<sim::profile_sample> samples;
  for (int n : {1, 8}) {
    for (int p : {16, 64, 256, 512}) samples.push_back({p, n, 0, 0, 0.0});
  }
  for (int c : {32, 256, 1024}) {
    for (int d : {1, 8, 32, 64}) {
      for (int p : {0, 16, 64, 256, 512}) samples.push_back({p, p % 3 == 1 ? 8 : 1, d, c, 0.0});
    }
  }
  return samples;
}

std::vector<sim::profile_sample> synthetic(const sim::profile_fit& truth) {
  auto samples = grid();
  for (auto& s : samples) s.seconds = truth.predict(sim::sample_shape(s));
  return samples;
}

sim::step_profile sample_profile() {
  sim::step_profile p;
  p.origin = {"cpu: test", "cpu (avx2 kernels)", 2, "bench-20M", "f32", "f32", "2026-01-01T00:00:00Z", 3};
  p.samples = synthetic(known_fit());
  auto fit = sim::fit_profile(p.samples, {64, 256});
  REQUIRE(fit.has_value());
  p.fit = *fit;
  return p;
}

}  // namespace

TEST_CASE("step profile: a grid point's shape is one prefill from 0 beside decodes at the context", "[core][sim]") {
  const auto shape = sim::sample_shape({100, 1, 3, 500, 0.0});
  REQUIRE(shape.num_seqs() == 4);
  CHECK(shape.seqs[0].num_tokens == 100);
  CHECK(shape.seqs[0].num_context_tokens == 100);
  CHECK(shape.seqs[3].num_tokens == 1);
  CHECK(shape.seqs[3].num_context_tokens == 500);
  CHECK(shape.num_tokens() == 103);
  CHECK(sim::sample_shape({0, 1, 2, 10, 0.0}).num_seqs() == 2);
  const auto batch = sim::sample_shape({64, 8, 2, 10, 0.0});
  CHECK(batch.num_seqs() == 10);
  CHECK(batch.num_tokens() == 8 * 64 + 2);
}

TEST_CASE("step profile: the fit's prediction adds each kind of work", "[core][sim]") {
  const auto f = known_fit();
  // 300 tokens from 0 in one sequence: 300 x 301 / 2 pairs.
  const double expected =
      2e-3 + 300 * 20e-6 - (300 - 64) * 10e-6 + (300 - 256) * 5e-6 + 50e-6 + 300 * 30e-9 + 45150 * 2e-9;
  CHECK(f.predict(sim::sample_shape({300, 1, 0, 0, 0.0})) == Approx(expected));
  // A decode at context 1000: its one token attends to 1000 keys.
  CHECK(f.predict(sim::sample_shape({0, 1, 1, 1000, 0.0})) == Approx(2e-3 + 20e-6 + 50e-6 + 1000 * 30e-9 + 1000 * 2e-9));
}

TEST_CASE("step profile: the fit recovers known coefficients from exact samples", "[core][sim]") {
  const auto truth = known_fit();
  auto fit = sim::fit_profile(synthetic(truth), truth.knots);
  REQUIRE(fit.has_value());
  CHECK(fit->fixed_s == Approx(truth.fixed_s).epsilon(1e-6));
  CHECK(fit->per_token_s == Approx(truth.per_token_s).epsilon(1e-6));
  REQUIRE(fit->per_token_above_s.size() == 2);
  CHECK(fit->per_token_above_s[0] == Approx(truth.per_token_above_s[0]).epsilon(1e-6));
  CHECK(fit->per_token_above_s[1] == Approx(truth.per_token_above_s[1]).epsilon(1e-6));
  CHECK(fit->per_seq_s == Approx(truth.per_seq_s).epsilon(1e-6));
  CHECK(fit->per_kv_token_s == Approx(truth.per_kv_token_s).epsilon(1e-6));
  CHECK(fit->per_attention_pair_s == Approx(truth.per_attention_pair_s).epsilon(1e-6));
  CHECK(fit->max_relative_error < 1e-9);
}

TEST_CASE("step profile: with noise the fit stays close and reports its error", "[core][sim]") {
  const auto truth = known_fit();
  auto samples = synthetic(truth);
  for (std::size_t i = 0; i < samples.size(); ++i) samples[i].seconds *= i % 2 ? 1.02 : 0.98;  // +-2%
  auto fit = sim::fit_profile(samples, truth.knots);
  REQUIRE(fit.has_value());
  CHECK(fit->max_relative_error > 0.005);
  CHECK(fit->max_relative_error < 0.05);
  for (const auto& s : grid()) {
    const auto shape = sim::sample_shape(s);
    CHECK(fit->predict(shape) == Approx(truth.predict(shape)).epsilon(0.05));
  }
}

TEST_CASE("step profile: samples that do not determine a coefficient are refused by name", "[core][sim]") {
  // Decodes only, all at one context: per token, per sequence and per pair move together.
  std::vector<sim::profile_sample> samples;
  for (int d : {1, 2, 4, 8, 16, 32, 64, 128}) samples.push_back({0, 1, d, 100, 1e-3 * d});
  auto fit = sim::fit_profile(samples, {});
  REQUIRE_FALSE(fit.has_value());
  CHECK(fit.error().message.find("do not determine the coefficient") != std::string::npos);
  CHECK_FALSE(sim::fit_profile({{16, 1, 0, 0, 1e-3}}, {}).has_value());  // fewer samples than coefficients
  auto bad = synthetic(known_fit());
  bad[3].seconds = 0.0;
  CHECK(sim::fit_profile(bad, {64, 256}).error().message.find("positive") != std::string::npos);
  CHECK_FALSE(sim::fit_profile(synthetic(known_fit()), {256, 64}).has_value());  // knots not ascending
}

TEST_CASE("step profile: the file round-trips", "[core][sim]") {
  const auto p = sample_profile();
  auto back = sim::parse_step_profile(sim::to_json_text(p));
  REQUIRE(back.has_value());
  CHECK(back->origin.device == "cpu: test");
  CHECK(back->origin.backend == "cpu (avx2 kernels)");
  CHECK(back->origin.threads == 2);
  CHECK(back->origin.model == "bench-20M");
  CHECK(back->origin.measured_at == "2026-01-01T00:00:00Z");
  CHECK(back->origin.repeats == 3);
  REQUIRE(back->samples.size() == p.samples.size());
  CHECK(back->samples[10].decode_seqs == p.samples[10].decode_seqs);
  CHECK(back->samples[1].prefill_seqs == p.samples[1].prefill_seqs);
  CHECK(back->samples[10].seconds == p.samples[10].seconds);
  CHECK(back->fit.knots == p.fit.knots);
  CHECK(back->fit.per_attention_pair_s == p.fit.per_attention_pair_s);
  CHECK(back->fit.per_kv_token_s == p.fit.per_kv_token_s);
  CHECK(back->fit.per_token_above_s == p.fit.per_token_above_s);
  const auto shape = sim::sample_shape({200, 2, 16, 700, 0.0});
  CHECK(back->fit.predict(shape) == p.fit.predict(shape));
}

TEST_CASE("step profile: a bad file is a clear error", "[core][sim]") {
  auto message = [](const std::string& text) {
    auto p = sim::parse_step_profile(text);
    REQUIRE_FALSE(p.has_value());
    return p.error().message;
  };
  CHECK(message("not json").find("not a JSON object") != std::string::npos);
  CHECK(message("{\"format\": \"other\"}").find("'format'") != std::string::npos);
  auto doc = nlohmann::json::parse(sim::to_json_text(sample_profile()));
  auto without = [&](const char* key) {
    auto d = doc;
    d.erase(key);
    return d.dump();
  };
  CHECK(message(without("device")).find("'device' is missing") != std::string::npos);
  CHECK(message(without("fit")).find("'fit' is missing") != std::string::npos);
  CHECK(message(without("samples")).find("'samples' is missing") != std::string::npos);
  auto d = doc;
  d["version"] = 2;
  CHECK(message(d.dump()).find("version 1") != std::string::npos);
  d = doc;
  d["fit"]["per_seq_s"] = "fast";
  CHECK(message(d.dump()).find("'per_seq_s' has the wrong type") != std::string::npos);
  d = doc;
  d["fit"]["per_token_above_s"] = {1e-6};
  CHECK(message(d.dump()).find("one value per knot") != std::string::npos);
  d = doc;
  d["samples"][0]["seconds"] = -1.0;
  CHECK(message(d.dump()).find("positive") != std::string::npos);
  auto missing = sim::load_step_profile("/nonexistent/profile.json");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code == errc::io_error);
  CHECK(missing.error().message.find("/nonexistent/profile.json") != std::string::npos);
}

TEST_CASE("profile cost model: the fit plus the engine overhead per step", "[core][sim]") {
  auto p = sample_profile();
  const auto path = std::string(INFLIGHT_BINARY_DIR) + "/sim_step_profile_test.json";
  {
    std::ofstream out(path);
    out << sim::to_json_text(p);
  }
  auto loaded = sim::load_step_profile(path);
  std::remove(path.c_str());
  REQUIRE(loaded.has_value());
  auto model = sim::profile_cost_model::try_create(*loaded, 0.5e-3);
  REQUIRE(model.has_value());
  const auto shape = sim::sample_shape({0, 1, 8, 300, 0.0});
  CHECK(model->step_seconds(shape) == Approx(known_fit().predict(shape) + 0.5e-3).epsilon(1e-6));
  CHECK(model->describe().find("bench-20M") != std::string::npos);
  CHECK_FALSE(sim::profile_cost_model::try_create(*loaded, -1.0).has_value());
}

TEST_CASE("step profile: a negative token slope counts as flat", "[core][sim]") {
  sim::profile_fit f;
  f.knots = {64};
  f.fixed_s = 1e-3;
  f.per_token_s = 20e-6;
  f.per_token_above_s = {-30e-6};  // -10 us per token above 64: the biggest steps would be free
  step_shape small, big;
  small.seqs.push_back({64, 64});
  big.seqs.push_back({1000, 1000});  // (no attention or sequence term: tokens alone)
  CHECK(f.predict(small) == Approx(1e-3 + 64 * 20e-6));
  CHECK(f.predict(big) == Approx(f.predict(small)));
}

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/bench/sim/profile_cost_model.hpp"
#include "core/bench/sim/step_profile.hpp"

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

TEST_CASE("step profile: steps recorded inside the engine fit by their own shapes and round-trip", "[core][sim]") {
  const auto truth = known_fit();
  // Ragged steps as an engine runs them: decodes at different contexts beside a prompt chunk
  // that starts past 0 (a chunked prefill), which no grid point has.
  std::vector<sim::profile_sample> steps;
  for (int i = 0; i < 60; ++i) {
    sim::profile_sample s;
    s.prefill_seqs = 0;
    const int chunk = 16 * (1 + i % 20), start = 64 * (i % 5);
    if (i % 3 != 0) s.seqs.push_back({chunk, start + chunk});
    for (int d = 0; d < 1 + (i * 7) % 40; ++d) s.seqs.push_back({1, 20 + (d * 37 + i * 11) % 900});
    s.seconds = truth.predict(sim::sample_shape(s));
    steps.push_back(std::move(s));
  }
  CHECK(sim::sample_shape(steps[1]).seqs.front().num_context_tokens == 64 + 32);  // its own shape, not a grid's
  auto fit = sim::fit_profile(steps, truth.knots);
  REQUIRE(fit.has_value());
  CHECK(fit->max_relative_error < 1e-6);
  CHECK(fit->per_attention_pair_s == Approx(truth.per_attention_pair_s).epsilon(1e-4));
  sim::step_profile p;
  p.origin = {"cpu: test", "cpu (steps recorded in the engine: variance)", 1, "bench-20M", "f32", "f32",
              "2026-01-01T00:00:00Z", 1};
  p.origin.source = "engine";
  p.samples = steps;
  p.samples[1].start_s = 12.5;  // a recorded start; the others have none
  p.fit = *fit;
  auto back = sim::parse_step_profile(sim::to_json_text(p));
  REQUIRE(back.has_value());
  CHECK(back->origin.source == "engine");
  REQUIRE(back->samples.size() == steps.size());
  REQUIRE(back->samples[1].seqs.size() == steps[1].seqs.size());
  CHECK(back->samples[1].seqs[0].num_tokens == steps[1].seqs[0].num_tokens);
  CHECK(back->samples[1].seqs.back().num_context_tokens == steps[1].seqs.back().num_context_tokens);
  CHECK(back->samples[7].seconds == steps[7].seconds);
  CHECK(back->samples[1].start_s == 12.5);
  CHECK(back->samples[7].start_s < 0);
  // A profile written before the source existed was measured on a grid.
  auto doc = nlohmann::json::parse(sim::to_json_text(sample_profile()));
  doc.erase("source");
  auto old = sim::parse_step_profile(doc.dump());
  REQUIRE(old.has_value());
  CHECK(old->origin.source == "grid");
  doc["source"] = "guess";
  CHECK_FALSE(sim::parse_step_profile(doc.dump()).has_value());
  // A recorded step with a sequence of no tokens is refused.
  steps[2].seqs[0].num_tokens = 0;
  CHECK_FALSE(sim::fit_profile(steps, truth.knots).has_value());
}

TEST_CASE("step profile: a coefficient the recorded steps do not determine is held at 0 when asked", "[core][sim]") {
  // Whole 512-token prompts from position 0, one per step, and decodes at one context:
  // the attention pairs move with the tokens and sequences, never apart.
  auto truth = known_fit();
  truth.per_attention_pair_s = 0.0;
  std::vector<sim::profile_sample> steps;
  for (int i = 0; i < 40; ++i) {
    sim::profile_sample s;
    s.prefill_seqs = 0;
    if (i % 4 == 0) s.seqs.push_back({512, 512});
    for (int d = 0; d < 1 + i % 9; ++d) s.seqs.push_back({1, 600});
    s.seconds = truth.predict(sim::sample_shape(s));
    steps.push_back(std::move(s));
  }
  auto strict = sim::fit_profile(steps, {});
  REQUIRE_FALSE(strict.has_value());
  CHECK(strict.error().message.find("do not determine") != std::string::npos);
  auto pinned = sim::fit_profile(steps, {}, /*pin_undetermined=*/true);
  REQUIRE(pinned.has_value());
  REQUIRE_FALSE(pinned->pinned.empty());
  CHECK(pinned->max_relative_error < 0.01);  // the steps it was fitted on are still predicted
  sim::step_profile p;
  p.origin.source = "engine";
  p.samples = steps;
  p.fit = *pinned;
  auto back = sim::parse_step_profile(sim::to_json_text(p));
  REQUIRE(back.has_value());
  CHECK(back->fit.pinned == pinned->pinned);
}

TEST_CASE("step profile: a time per unit of work never fits below 0, it is held at 0 and named", "[core][sim]") {
  // Steps whose time falls as more K/V is read (as noise, or work that moves with other
  // work, can make a recording look): the least-squares answer is a negative time per K/V
  // position, which would make long contexts cheap. The fit holds it at 0 instead.
  auto truth = known_fit();
  truth.per_kv_token_s = -30e-9;
  auto fit = sim::fit_profile(synthetic(truth), truth.knots);
  REQUIRE(fit.has_value());
  CHECK(fit->per_kv_token_s == 0.0);
  // The most negative first; the attention pairs, which grow with the K/V read, may
  // follow it below 0 in the refit, and are held too.
  REQUIRE_FALSE(fit->pinned.empty());
  CHECK(fit->pinned.front() == "per_kv_token_s (fitted below 0)");
  for (const auto& name : fit->pinned) CHECK_THAT(name, Catch::EndsWith("(fitted below 0)"));
  CHECK(fit->fixed_s >= 0.0);
  CHECK(fit->per_token_s >= 0.0);
  CHECK(fit->per_seq_s >= 0.0);
  CHECK(fit->per_attention_pair_s >= 0.0);
  CHECK(fit->mean_relative_error > 0.0);  // the held coefficient costs accuracy, and it says so
  // A longer context never predicts a shorter step.
  const auto at = [&](int context) { return fit->predict(sim::sample_shape({0, 1, 8, context, 0.0})); };
  CHECK(at(1024) >= at(32));
  // Coefficients that fit at or above 0 are untouched by the rule.
  auto exact = sim::fit_profile(synthetic(known_fit()), known_fit().knots);
  REQUIRE(exact.has_value());
  CHECK(exact->pinned.empty());
}

// `inflight bench profile`: step times of the deployment's backend over a grid of step
// shapes (one prefilling sequence beside decode sequences at a context), a fit of them
// (core/bench/sim/step_profile.hpp), and both written to a JSON file that `inflight simulate
// --cost-model profile:FILE` reads. Drives the backend directly, as `bench forward` does.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "apps/inflight/commands.hpp"
#include "apps/inflight/host_info.hpp"
#include "backends/backend_factory.hpp"
#include "core/bench/sim/step_profile.hpp"
#include "core/model/model_loader.hpp"

namespace inflight::app {
namespace {

struct profile_options {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string shape;
  std::vector<int> prefills = {0, 16, 64, 256, 512};
  std::vector<int> prefill_seqs = {1, 8};
  std::vector<int> decodes = {0, 1, 16, 64};
  std::vector<int> contexts = {32, 256, 1024};
  std::vector<int> knots = {64, 256};
  int repeats = 3;
  std::string output = "profile.json";
  std::vector<std::string> refit;  // profiles whose samples are fitted again, together (no measuring)
};

/// The grid: every (prefill tokens x prefill seqs, decode seqs, context), the
/// prefill-only points once.
std::vector<sim::profile_sample> grid_of(const profile_options& o) {
  std::vector<sim::profile_sample> grid;
  for (int c : o.contexts) {
    for (int d : o.decodes) {
      if (d == 0 && c != o.contexts.front()) continue;  // no decodes: the context does not matter
      if (d > 0) grid.push_back({0, 1, d, c, 0.0});
      for (int n : o.prefill_seqs) {
        for (int p : o.prefills) {
          if (p > 0) grid.push_back({p, n, d, d > 0 ? c : 0, 0.0});
        }
      }
    }
  }
  return grid;
}

void check_options(const profile_options& o, int max_context) {
  auto all_of = [](const std::vector<int>& v, auto pred) { return std::all_of(v.begin(), v.end(), pred); };
  if (!all_of(o.prefills, [](int v) { return v >= 0; }) || !all_of(o.decodes, [](int v) { return v >= 0; }))
    fail("--prefill and --decode take counts >= 0");
  if (o.prefill_seqs.empty() || !all_of(o.prefill_seqs, [](int v) { return v >= 1; }))
    fail("--prefill-seqs takes counts >= 1");
  if (o.contexts.empty() || !all_of(o.contexts, [&](int v) { return v >= 1 && v <= max_context; }))
    fail("--context takes lengths from 1 to the model's context (" + std::to_string(max_context) + ")");
  if (!all_of(o.prefills, [&](int v) { return v <= max_context; }))
    fail("--prefill: longer than the model's context (" + std::to_string(max_context) + ")");
  if (o.repeats < 1) fail("--repeats: at least 1");
}

/// A step of the grid point's shape. Blocks are taken in turn from the backend's pool and
/// wrap around when the grid needs more than it holds (the K/V read is then partly shared).
step_plan plan_of(const sim::profile_sample& s, int block_size, int num_blocks) {
  step_plan plan;
  int next_block = 0;
  auto add = [&](int start, int num_tokens, seq_id id) {
    seq_step st;
    st.id = id;
    st.tokens.assign(std::size_t(num_tokens), token_id(3 + id % 100));
    st.start_position = start;
    const int blocks = (start + num_tokens + block_size - 1) / block_size;
    for (int b = 0; b < blocks; ++b) st.block_table.push_back(next_block++ % num_blocks);
    st.do_sample = true;
    st.params.temperature = 0.0f;
    plan.seqs.push_back(std::move(st));
  };
  seq_id next_id = 1;
  for (int i = 0; s.prefill_tokens > 0 && i < s.prefill_seqs; ++i) add(0, s.prefill_tokens, next_id++);
  for (int i = 0; i < s.decode_seqs; ++i) add(s.context - 1, 1, next_id++);
  return plan;
}

double time_step(backend& be, const step_plan& plan) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = be.execute(plan);
  if (!r) fail(r.error().message);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Each point's median over `repeats` passes through the whole grid: one step of a shape
/// never follows a step of the same shape, as in an engine, where no two steps are alike
/// (the same step again finds its activations and K/V in the caches).
void time_grid(backend& be, std::vector<sim::profile_sample>& grid, int repeats) {
  std::vector<step_plan> plans;
  for (const auto& s : grid) plans.push_back(plan_of(s, be.block_size(), be.num_kv_blocks()));
  std::vector<std::vector<double>> times(grid.size());
  for (int pass = 0; pass < repeats; ++pass) {
    for (std::size_t i = 0; i < grid.size(); ++i) times[i].push_back(time_step(be, plans[i]));
  }
  for (std::size_t i = 0; i < grid.size(); ++i) {
    std::sort(times[i].begin(), times[i].end());
    grid[i].seconds = times[i][times[i].size() / 2];
    std::fprintf(stderr, "  prefill %d x %4d + %3d decodes at context %5d: %9.3f ms\n", grid[i].prefill_seqs,
                 grid[i].prefill_tokens, grid[i].decode_seqs, grid[i].context, grid[i].seconds * 1e3);
  }
}

/// KV blocks the grid needs with every sequence in blocks of its own.
int blocks_needed(const profile_options& o, int block_size) {
  const int max_prefill = o.prefills.empty() ? 0 : *std::max_element(o.prefills.begin(), o.prefills.end());
  const int max_prefill_seqs = *std::max_element(o.prefill_seqs.begin(), o.prefill_seqs.end());
  const int max_decode = o.decodes.empty() ? 0 : *std::max_element(o.decodes.begin(), o.decodes.end());
  const int max_context = *std::max_element(o.contexts.begin(), o.contexts.end());
  auto blocks = [&](int tokens) { return (tokens + block_size - 1) / block_size; };
  return max_prefill_seqs * blocks(max_prefill) + max_decode * blocks(max_context);
}

sim::profile_origin origin_of(const profile_options& o, const deployment& d, const loaded_model& model,
                              const backend& be) {
  sim::profile_origin origin;
  origin.model = o.shape.empty() ? model.name : o.shape;
  origin.backend = be.name();
  origin.device = be.name();
  origin.kv_dtype = kv_dtype_of(d);
  origin.weight_dtype = weight_dtype_list(*model.weights);
  if (const auto* cpu = dynamic_cast<const cpu_backend*>(&be)) {
    origin.device = "cpu: " + cpu_model_name();
    origin.backend = std::string("cpu (") + kernels::cpu::to_string(cpu->isa()) + " kernels)";
    origin.threads = cpu->num_threads();
  }
  origin.measured_at = utc_now();
  origin.repeats = o.repeats;
  return origin;
}

/// Fits the samples, prints them beside the fit, and writes the profile.
void fit_and_write(sim::step_profile profile, const profile_options& o) {
  // Recorded steps vary only as their workloads did: what they leave undetermined is 0.
  auto fit = sim::fit_profile(profile.samples, o.knots, /*pin_undetermined=*/profile.origin.source == "engine");
  if (!fit) fail(fit.error().message);
  profile.fit = *fit;
  if (profile.origin.source == "engine") {  // thousands of recorded steps: their count, not each
    std::printf("%zu steps recorded inside the engine\n", profile.samples.size());
  } else {
    std::printf("%8s %5s %6s %8s %11s %11s %7s\n", "prefill", "x seq", "decode", "context", "ms", "fit ms", "error");
  }
  for (const auto& s : profile.samples) {
    if (profile.origin.source == "engine") break;
    const double predicted = fit->predict(sim::sample_shape(s));
    std::printf("%8d %5d %6d %8d %11.3f %11.3f %6.1f%%\n", s.prefill_tokens, s.prefill_tokens ? s.prefill_seqs : 0,
                s.decode_seqs, s.context, s.seconds * 1e3, predicted * 1e3, 100.0 * (predicted - s.seconds) / s.seconds);
  }
  std::printf("fit: %.4f ms + %.5f ms/token", fit->fixed_s * 1e3, fit->per_token_s * 1e3);
  for (std::size_t k = 0; k < fit->knots.size(); ++k)
    std::printf(" %+.5f ms/token above %d", fit->per_token_above_s[k] * 1e3, fit->knots[k]);
  std::printf(" + %.4f ms/seq + %.3g ms/KV token + %.3g ms/attention pair; relative error mean %.1f%%, max %.1f%%\n",
              fit->per_seq_s * 1e3, fit->per_kv_token_s * 1e3, fit->per_attention_pair_s * 1e3,
              100.0 * fit->mean_relative_error, 100.0 * fit->max_relative_error);
  // Named "... (fitted below 0)" when it fitted negative, else the steps did not determine it.
  for (const auto& name : fit->pinned) std::printf("held at 0: %s\n", name.c_str());
  std::ofstream out(o.output, std::ios::binary);
  if (!out || !(out << sim::to_json_text(profile))) fail("cannot write " + o.output);
  std::printf("wrote %s\n", o.output.c_str());
}

void run_bench_profile(const profile_options& o) {
  if (!o.refit.empty()) {
    auto profile = sim::load_step_profile(o.refit.front());
    if (!profile) fail(profile.error().message);
    for (std::size_t i = 1; i < o.refit.size(); ++i) {  // the union of their samples
      auto more = sim::load_step_profile(o.refit[i]);
      if (!more) fail(more.error().message);
      if (more->origin.model != profile->origin.model || more->origin.source != profile->origin.source ||
          more->origin.device != profile->origin.device || more->origin.threads != profile->origin.threads)
        fail("--refit: " + o.refit[i] + " was measured on another model, device, thread count or source than " +
             o.refit.front());
      profile->samples.insert(profile->samples.end(), more->samples.begin(), more->samples.end());
    }
    return fit_and_write(std::move(*profile), o);
  }
  deployment d = load_deployment_or_fail(o.config_path, o.overrides);
  if (!o.shape.empty()) use_named_shape(d, o.shape);
  auto model = load_model(d.model, d.engine.backend);
  if (!model) fail(model.error().message);
  check_options(o, model->weights->config.max_seq_len);
  // Blocks of its own for every sequence when the deployment's KV memory holds them.
  auto settings = d.engine;
  const int needed = blocks_needed(o, settings.block_size);
  if (settings.kv_blocks == 0 && settings.backend == "cpu") {
    const auto& c = model->weights->config;
    const double element = settings.kv_dtype == "f16" || settings.kv_dtype == "bf16" ? 2.0 : 4.0;
    const double block_bytes = 2.0 * c.num_layers * c.kv_dim() * element * settings.block_size;
    if (needed * block_bytes <= double(settings.kv_memory_bytes)) settings.kv_blocks = needed;
  }
  auto be = make_backend(settings, model->weights);
  if (!be) fail(be.error().message);
  if (auto ok = (*be)->warm_up(); !ok) fail(ok.error().message);
  sim::step_profile profile;
  profile.origin = origin_of(o, d, *model, **be);
  const auto& origin = profile.origin;
  std::printf("profile: %s on %s, %s, %d threads, %s weights, %s KV, %d KV blocks (%d wanted)\n", origin.model.c_str(),
              origin.device.c_str(), origin.backend.c_str(), origin.threads, origin.weight_dtype.c_str(),
              origin.kv_dtype.c_str(), (*be)->num_kv_blocks(), needed);
  profile.samples = grid_of(o);
  time_grid(**be, profile.samples, o.repeats);
  fit_and_write(std::move(profile), o);
}

}  // namespace

void add_bench_profile_command(CLI::App& bench) {
  auto o = std::make_shared<profile_options>();
  auto* cmd = bench.add_subcommand("profile", "Time backend steps over a grid of shapes and fit a step-cost model "
                                              "(for inflight simulate --cost-model profile:FILE)");
  cmd->add_option("--config", o->config_path, "deployment TOML (backend, threads, KV memory and type, the model)");
  cmd->add_option("--set", o->overrides, "override a deployment key (key=value), repeatable");
  cmd->add_option("--shape", o->shape, "random weights of a named shape (bench-20M, bench-110M, ...; default: the "
                                       "deployment's model)");
  cmd->add_option("--prefill", o->prefills, "tokens of the one prefilling sequence (0 = none)")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--prefill-seqs", o->prefill_seqs, "prefilling sequences of that length in one step")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--decode", o->decodes, "decode sequences beside it")->delimiter(',')->capture_default_str();
  cmd->add_option("--context", o->contexts, "context length of each decode sequence")->delimiter(',')->capture_default_str();
  cmd->add_option("--knots", o->knots, "step tokens where the fit's per-token slope may change")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--repeats", o->repeats, "passes through the grid, each timing every point once (the median is kept)")->capture_default_str();
  cmd->add_option("--refit", o->refit,
                  "fit the samples of these profiles again, together (e.g. with other --knots, or steps recorded by "
                  "several `bench offline --record-steps` runs); no measuring")
      ->delimiter(',');
  cmd->add_option("--output,-o", o->output, "the profile file to write")->capture_default_str();
  cmd->callback([o] { run_bench_profile(*o); });
}

}  // namespace inflight::app

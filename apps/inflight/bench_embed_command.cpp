#include "apps/inflight/bench_embed_command.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <tuple>

#include "actors/engine/engine.hpp"
#include "apps/inflight/bench_report.hpp"
#include "apps/inflight/commands.hpp"
#include "core/bench/rerank_workload.hpp"

namespace inflight::app {
namespace {

struct embed_run {
  std::vector<double> latency_ms;  ///< per request: submission of its inputs to the last embedding
  int num_inputs = 0;
  long long num_tokens = 0, num_cached_tokens = 0;
  int num_failed = 0;
  std::string first_error;
  double duration_s = 0.0;
  engine_snapshot snapshot;
  int num_generated = 0;      ///< tokens of the generation requests alongside
  double generation_s = 0.0;  ///< submission to the last generation's end
  double tpot_ms = 0.0;       ///< their mean TPOT
};

/// Embeddings arrive on engine threads; the main thread waits for them all.
class embed_tracker {
 public:
  embed_tracker(embed_run& run, std::size_t num_requests) : run_(run), num_left_(num_requests), end_s_(num_requests) {}
  void expect(std::size_t request, int num_inputs) {
    std::lock_guard lock(mutex_);
    num_left_[request] = num_inputs;
    num_pending_ += num_inputs;
  }
  void on_finish(std::size_t request, const finish_event& ev) {
    std::lock_guard lock(mutex_);
    run_.num_tokens += ev.prompt_tokens;
    run_.num_cached_tokens += ev.cached_tokens;
    if (ev.embedding.empty() && run_.num_failed++ == 0) run_.first_error = ev.cause ? ev.cause->message : "no embedding";
    if (--num_left_[request] == 0) end_s_[request] = monotonic_seconds();
    if (--num_pending_ == 0) cv_.notify_all();
  }
  /// Waits for every input; the time each request got its last embedding.
  std::vector<double> wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return num_pending_ == 0; });
    return end_s_;
  }

 private:
  embed_run& run_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<int> num_left_;
  std::vector<double> end_s_;
  int num_pending_ = 0;
};

/// The generation requests running alongside: counts their tokens, waits for them all.
class generation_tracker final {
 public:
  explicit generation_tracker(int count) : num_left_(count) {}
  void on_finish(const finish_event& ev) {
    std::lock_guard lock(mutex_);
    num_tokens_ += ev.completion_tokens;
    tpot_sum_ms_ += ev.timings.tpot_ms;
    ++num_done_;
    if (--num_left_ == 0) cv_.notify_all();
  }
  /// Waits for every generation; returns (tokens, mean TPOT ms).
  std::pair<int, double> wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return num_left_ <= 0; });
    return {num_tokens_, num_done_ > 0 ? tpot_sum_ms_ / num_done_ : 0.0};
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int num_left_;
  int num_done_ = 0, num_tokens_ = 0;
  double tpot_sum_ms_ = 0.0;
};

class generation_sink final : public request_sink {
 public:
  explicit generation_sink(generation_tracker& tracker) : tracker_(&tracker) {}
  void on_token(const token_event&) override {}
  void on_finish(const finish_event& ev) override { tracker_->on_finish(ev); }

 private:
  generation_tracker* tracker_;
};

class input_sink final : public request_sink {
 public:
  input_sink(embed_tracker& tracker, std::size_t request) : tracker_(&tracker), request_(request) {}
  void on_token(const token_event&) override {}
  void on_finish(const finish_event& ev) override { tracker_->on_finish(request_, ev); }

 private:
  embed_tracker* tracker_;
  std::size_t request_;
};

/// All requests at once; each request's texts are its inputs. `num_generations`
/// generation requests (a case's query as the prompt, 128 tokens) go in first.
embed_run run_workload(const deployment& d, const loaded_model& model, const std::vector<bench::rerank_case>& cases,
                       pooling_kind pooling, int num_generations) {
  auto eng = engine::start(d, model);
  if (!eng) fail("embed workload: " + eng.error().message);
  embed_run run;
  embed_tracker tracker(run, cases.size());
  generation_tracker generations(num_generations);
  std::vector<double> start_s(cases.size());
  const double start = monotonic_seconds();
  for (int g = 0; g < num_generations; ++g) {
    generate_request req;
    req.prompt = model.tok->encode(cases[std::size_t(g) % cases.size()].query, model.tok->adds_bos());
    req.params.max_tokens = 128;
    req.params.temperature = 0;
    req.params.ignore_eos = true;
    if (auto id = (*eng)->submit(std::move(req), std::make_shared<generation_sink>(generations)); !id) {
      fail("embed workload: generation: " + id.error().message);
    }
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::vector<std::string> texts = cases[i].documents;
    texts.push_back(cases[i].query);
    tracker.expect(i, int(texts.size()));
    start_s[i] = monotonic_seconds();
    for (const auto& text : texts) {
      generate_request req;
      req.prompt = model.tok->encode(text, model.tok->adds_bos());
      req.pooling = pooling;
      if (auto id = (*eng)->submit(std::move(req), std::make_shared<input_sink>(tracker, i)); !id) {
        fail("embed workload: " + id.error().message);
      }
      ++run.num_inputs;
    }
  }
  const auto end_s = tracker.wait();
  run.duration_s = monotonic_seconds() - start;
  if (num_generations > 0) {
    std::tie(run.num_generated, run.tpot_ms) = generations.wait();
    run.generation_s = monotonic_seconds() - start;
  }
  run.snapshot = (*eng)->snapshot();
  (*eng)->shutdown(0.0);
  for (std::size_t i = 0; i < cases.size(); ++i) run.latency_ms.push_back((end_s[i] - start_s[i]) * 1e3);
  return run;
}

double pct(const bench::metric_stats& m, double p) {
  for (const auto& [q, v] : m.percentiles) if (q == p) return v;
  return 0.0;
}

}  // namespace

void run_embed_bench(const embed_bench_options& o, const deployment& base, const loaded_model& model) {
  auto size = bench::parse_workload_size(o.size);
  if (!size) fail(size.error().message);
  std::mt19937_64 rng(o.seed);
  auto cases = bench::rerank_workload(*size, o.num_requests, *model.tok, rng);
  if (!cases) fail(cases.error().message);
  int num_inputs = 0;
  for (const auto& c : *cases) num_inputs += int(c.documents.size()) + 1;
  const auto recipe = try_resolve_embedding(base.embeddings.pooling, base.embeddings.normalize, model.pooling);
  if (!recipe) fail("embed workload: " + recipe.error().message);
  const auto caching = o.prefix_caching.empty() ? std::vector<bool>{base.engine.enable_prefix_caching} : o.prefix_caching;
  std::printf("workload embed (%s), %zu requests x %zu inputs, pooling %s, model %s, max_num_seqs %d%s\n",
              o.size.c_str(), cases->size(), cases->front().documents.size() + 1, to_string(recipe->pooling),
              model.name.c_str(), base.engine.max_num_seqs,
              o.num_generations > 0 ? (", with " + std::to_string(o.num_generations) + " generations alongside").c_str()
                                    : "");
  std::printf("%-12s %5s %7s %9s %10s %7s %9s %9s %6s %6s\n", "policy", "cache", "budget", "inputs/s", "tokens/s",
              "cached", "lat p50", "lat p99", "batch", "steps");
  nlohmann::json doc = {{"workload", "embed"}, {"size", o.size}, {"seed", o.seed}};
  for (const auto& policy : o.policies) {
    for (const bool is_caching : caching) {
      deployment d = base;
      d.scheduler.policy = policy;
      d.engine.enable_prefix_caching = is_caching;
      d.server.max_waiting_requests = std::max(d.server.max_waiting_requests, num_inputs + o.num_generations + 1);
      const auto run = run_workload(d, model, *cases, recipe->pooling, o.num_generations);
      if (run.num_failed > 0) fail(policy + ": " + std::to_string(run.num_failed) + " inputs failed: " + run.first_error);
      const auto latency = bench::describe(run.latency_ms, {50, 99});
      const double secs = std::max(1e-9, run.duration_s);
      const double steps = double(std::max<std::uint64_t>(1, run.snapshot.num_steps));
      std::printf("%-12s %5s %7d %9.1f %10.0f %6.1f%% %9.3f %9.3f %6.1f %6llu\n", policy.c_str(),
                  is_caching ? "on" : "off", d.engine.max_num_batched_tokens, run.num_inputs / secs,
                  double(run.num_tokens) / secs, 100.0 * double(run.num_cached_tokens) / double(std::max(1LL, run.num_tokens)),
                  pct(latency, 50) / 1e3, pct(latency, 99) / 1e3, run.snapshot.batch_size_sum / steps,
                  (unsigned long long)run.snapshot.num_steps);
      if (o.num_generations > 0) {
        std::printf("%-12s alongside: %d generations, %d tokens, %.1f tokens/s, TPOT %.2f ms\n", "", o.num_generations,
                    run.num_generated, run.num_generated / std::max(1e-9, run.generation_s), run.tpot_ms);
      }
      doc["runs"].push_back({{"policy", policy}, {"prefix_caching", is_caching},
                             {"budget", d.engine.max_num_batched_tokens}, {"duration_s", run.duration_s},
                             {"num_inputs", run.num_inputs}, {"num_tokens", run.num_tokens},
                             {"num_cached_tokens", run.num_cached_tokens},
                             {"inputs_per_s", run.num_inputs / secs}, {"tokens_per_s", double(run.num_tokens) / secs},
                             {"latency_ms", app::to_json(latency)}, {"num_steps", run.snapshot.num_steps},
                             {"num_generations", o.num_generations}, {"generated_tokens", run.num_generated},
                             {"generation_tokens_per_s", run.num_generated / std::max(1e-9, run.generation_s)},
                             {"generation_tpot_ms", run.tpot_ms}});
    }
  }
  std::printf("(latency per request in seconds, submission of its inputs to the last embedding; cached = input "
              "tokens taken from the prefix cache; batch = mean sequences per step)\n");
  if (!o.result_json.empty()) write_json_file(o.result_json, doc);
}

}  // namespace inflight::app

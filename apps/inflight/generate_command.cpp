// `inflight generate`: runs prompts through the engine; a single prompt streams to
// stdout as tokens are produced, several are printed as each finishes. Timings
// (TTFT, TPOT, tokens/s) go to stderr.
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>

#include "actors/engine/engine.hpp"
#include "apps/inflight/commands.hpp"
#include "config/deployment_loader.hpp"

namespace inflight::app {
namespace {

struct generate_options {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string model_path;
  std::string tokenizer_path;
  std::string prompt;
  std::string prompts_file;
  int num_prompts = 1;
  sampling_params params;
  std::optional<std::uint64_t> seed;
};

/// Collects one request's output; prints it live when `is_streaming`.
class print_sink final : public request_sink {
 public:
  print_sink(std::string prompt, bool is_streaming, std::mutex& mutex, std::condition_variable& cv, int& num_done)
      : prompt_(std::move(prompt)), is_streaming_(is_streaming), mutex_(mutex), cv_(cv), num_done_(num_done) {}

  void on_token(const token_event& ev) override {
    std::lock_guard lock(mutex_);
    text_ += ev.text;
    if (is_streaming_) std::cout << ev.text << std::flush;
  }

  void on_finish(const finish_event& ev) override {
    std::lock_guard lock(mutex_);
    text_ += ev.text;
    if (is_streaming_) std::cout << ev.text << std::flush;
    finish_ = ev;
    ++num_done_;
    cv_.notify_all();
  }

  const std::string& prompt() const { return prompt_; }
  const std::string& text() const { return text_; }
  const finish_event& finish() const { return finish_; }

 private:
  std::string prompt_;
  bool is_streaming_;
  std::mutex& mutex_;
  std::condition_variable& cv_;
  int& num_done_;
  std::string text_;
  finish_event finish_;
};

std::vector<std::string> read_prompts(const generate_options& o) {
  std::vector<std::string> prompts;
  if (!o.prompts_file.empty()) {
    std::ifstream in(o.prompts_file);
    if (!in) fail("cannot open " + o.prompts_file);
    for (std::string line; std::getline(in, line);) prompts.push_back(line);
  } else {
    for (int i = 0; i < o.num_prompts; ++i) prompts.push_back(o.prompt);
  }
  if (prompts.empty()) fail("no prompts");
  return prompts;
}

deployment make_deployment(const generate_options& o) {
  deployment d = load_deployment_or_fail(o.config_path, o.overrides);
  if (!o.model_path.empty()) d.model.path = o.model_path;
  fetch_hub_models_or_fail(d);
  if (!o.tokenizer_path.empty()) d.model.tokenizer = o.tokenizer_path;
  return d;
}

void print_summary(const std::vector<std::shared_ptr<print_sink>>& sinks, double wall_s, const engine_snapshot& e) {
  int num_tokens = 0;
  double ttft = 0, tpot = 0;
  for (const auto& s : sinks) {
    num_tokens += s->finish().completion_tokens;
    ttft += s->finish().timings.ttft_ms;
    tpot += s->finish().timings.tpot_ms;
  }
  const double n = double(sinks.size());
  const auto& f = sinks.front()->finish();
  std::fprintf(stderr, "requests: %zu, prompt tokens: %d (first), generated tokens: %d\n", sinks.size(),
               f.prompt_tokens, num_tokens);
  std::fprintf(stderr, "TTFT: %.2f ms, TPOT: %.3f ms (%.1f tokens/s per request), throughput: %.1f tokens/s\n",
               ttft / n, tpot / n, tpot > 0 ? 1e3 * n / tpot : 0.0, wall_s > 0 ? num_tokens / wall_s : 0.0);
  // Where a step's time goes: inside the backend, the rest of the step (plan, KV grant,
  // apply, routing) and between steps (messages, waking threads), over the whole run.
  if (e.num_steps > 0) {
    const double steps = double(e.num_steps);
    std::fprintf(stderr, "steps: %llu, per step: %.3f ms wall, %.3f ms backend, %.3f ms plan to applied\n",
                 static_cast<unsigned long long>(e.num_steps), 1e3 * wall_s / steps, 1e3 * e.backend_seconds / steps,
                 1e3 * e.engine_seconds / steps);
  }
}

void run_generate(const generate_options& o) {
  const auto d = make_deployment(o);
  auto model = load_model(d.model, d.engine.backend);
  if (!model) fail(model.error().message);
  auto eng = engine::start(d, std::move(*model));
  if (!eng) fail(eng.error().message);
  const auto prompts = read_prompts(o);
  std::mutex mutex;
  std::condition_variable cv;
  int num_done = 0;
  const bool is_streaming = prompts.size() == 1;
  std::vector<std::shared_ptr<print_sink>> sinks;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& prompt : prompts) {
    generate_request req;
    const auto& tok = *(*eng)->model().tok;
    req.prompt = tok.encode(prompt, tok.adds_bos());
    req.params = o.params;
    req.seed = o.seed;
    auto sink = std::make_shared<print_sink>(prompt, is_streaming, mutex, cv, num_done);
    if (is_streaming) std::cout << prompt << std::flush;
    if (auto id = (*eng)->submit(std::move(req), sink); !id) fail(id.error().message);
    sinks.push_back(std::move(sink));
  }
  {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return num_done == int(sinks.size()); });
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto totals = (*eng)->snapshot();
  (*eng)->shutdown(0.0);
  for (std::size_t i = 0; i < sinks.size(); ++i) {
    const auto& s = *sinks[i];
    if (is_streaming) {
      std::cout << "\n";
    } else {
      std::cout << "[" << i << "] " << s.prompt() << s.text() << "\n";
    }
    if (const auto& cause = s.finish().cause; s.finish().reason == finish_reason::error && cause)
      std::cerr << "request " << i << ": " << cause->message << "\n";
  }
  print_summary(sinks, wall, totals);
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto o = std::make_shared<generate_options>();
  o->params.max_tokens = 256;
  auto* cmd = app.add_subcommand("generate", "Generate text for prompts through the engine");
  cmd->add_option("--config", o->config_path, "deployment TOML (default: built-in defaults)");
  cmd->add_option("--set", o->overrides, "override a config key: --set engine.max_num_seqs=8");
  cmd->add_option("--model", o->model_path, "llama2.c checkpoint, Hugging Face folder, GGUF file or hf:ORG/REPO[:QUANT] name");
  cmd->add_option("--tokenizer", o->tokenizer_path, "tokenizer file");
  cmd->add_option("--prompt", o->prompt, "prompt text");
  cmd->add_option("--n-prompts", o->num_prompts, "run the prompt this many times concurrently")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--prompts-file", o->prompts_file, "one prompt per line, all run concurrently");
  cmd->add_option("--max-tokens", o->params.max_tokens, "tokens to generate")->check(CLI::PositiveNumber);
  cmd->add_option("--temperature", o->params.temperature, "0 = greedy")->capture_default_str();
  cmd->add_option("--top-k", o->params.top_k, "keep the k most likely tokens (0 = off)");
  cmd->add_option("--top-p", o->params.top_p, "nucleus sampling (1 = off)");
  cmd->add_option("--min-p", o->params.min_p, "drop tokens below min_p x the top probability");
  cmd->add_option("--repetition-penalty", o->params.repetition_penalty, "1 = off");
  cmd->add_option("--presence-penalty", o->params.presence_penalty, "0 = off");
  cmd->add_option("--frequency-penalty", o->params.frequency_penalty, "0 = off");
  cmd->add_option("--seed", o->seed, "sampling seed (reproducible)");
  cmd->add_flag("--ignore-eos", o->params.ignore_eos, "do not stop at end-of-sequence tokens");
  cmd->callback([o] { run_generate(*o); });
}

}  // namespace inflight::app

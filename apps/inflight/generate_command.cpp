// `inflight generate`: streams a completion to stdout, timings to stderr.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>

#include "actors/backend/cpu_backend.hpp"
#include "apps/inflight/commands.hpp"
#include "core/model/llama2c.hpp"
#include "core/sampling/sampler.hpp"
#include "core/tokenizer/llama2c_tokenizer.hpp"

namespace inflight::app {
namespace {

struct generate_options {
  std::string model_path;
  std::string tokenizer_path;
  std::string prompt;
  sampling_params params;
  std::uint64_t seed = 0;
  bool has_seed = false;
};

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

void run_generate(generate_options& o) {
  auto weights = load_llama2c(o.model_path);
  if (!weights) fail(weights.error().message);
  auto tok = llama2c_tokenizer::load(o.tokenizer_path, weights->config.vocab_size);
  if (!tok) fail(tok.error().message);
  const int max_seq_len = weights->config.max_seq_len;
  auto shared = std::make_shared<const model_weights>(std::move(*weights));
  const int block_size = 16;
  auto be = cpu_backend::create(shared, {block_size, (max_seq_len + block_size - 1) / block_size, 0});
  if (!be) fail(be.error().message);
  if (auto ok = try_validate(o.params); !ok) fail(ok.error().message);

  std::vector<token_id> tokens = (*tok)->encode(o.prompt, true);
  const int num_prompt = int(tokens.size());
  if (num_prompt >= max_seq_len) fail("prompt of " + std::to_string(num_prompt) + " tokens exceeds the context");
  seq_step st;
  st.start_position = 0;
  for (int b = 0; b * block_size < max_seq_len; ++b) st.block_table.push_back(b);
  st.do_sample = true;
  st.params = o.params;
  st.seed = o.has_seed ? o.seed : std::random_device{}();
  st.num_prompt_tokens = num_prompt;

  incremental_decoder decoder(**tok);
  std::cout << o.prompt << std::flush;
  const auto start = clock_type::now();
  double ttft = 0.0;
  int num_generated = 0;
  st.tokens = tokens;
  while (num_generated < o.params.max_tokens && int(tokens.size()) < max_seq_len) {
    if (o.params.has_penalties()) st.history = tokens;
    st.sample_index = std::uint64_t(num_generated);
    step_plan plan;
    plan.seqs.push_back(st);
    auto r = (*be)->execute(plan);
    if (!r) fail(r.error().message);
    const token_id next = r->tokens.at(0).token;
    if (num_generated++ == 0) ttft = seconds_since(start);
    if (is_stop_token(next, o.params, (*tok)->eos_ids()) || next == (*tok)->bos_id()) break;
    tokens.push_back(next);
    std::cout << decoder.push(next) << std::flush;
    st.start_position = int(tokens.size()) - 1;
    st.tokens = {next};
  }
  std::cout << decoder.flush() << "\n";
  const double total = seconds_since(start);
  const double tpot = num_generated > 1 ? (total - ttft) / (num_generated - 1) : 0.0;
  std::fprintf(stderr, "prompt tokens: %d, generated tokens: %d\n", num_prompt, num_generated);
  std::fprintf(stderr, "TTFT: %.2f ms, TPOT: %.3f ms, decode: %.1f tokens/s, end-to-end: %.1f tokens/s\n",
               ttft * 1e3, tpot * 1e3, tpot > 0 ? 1.0 / tpot : 0.0, total > 0 ? num_generated / total : 0.0);
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto o = std::make_shared<generate_options>();
  o->params.max_tokens = 256;
  auto* cmd = app.add_subcommand("generate", "Generate text for a prompt, streamed to stdout");
  cmd->add_option("--model", o->model_path, "llama2.c checkpoint (.bin)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--tokenizer", o->tokenizer_path, "llama2.c tokenizer.bin")->required()->check(CLI::ExistingFile);
  cmd->add_option("--prompt", o->prompt, "prompt text");
  cmd->add_option("--max-tokens", o->params.max_tokens, "tokens to generate")->check(CLI::PositiveNumber);
  cmd->add_option("--temperature", o->params.temperature, "0 = greedy")->capture_default_str();
  cmd->add_option("--top-k", o->params.top_k, "keep the k most likely tokens (0 = off)");
  cmd->add_option("--top-p", o->params.top_p, "nucleus sampling (1 = off)");
  cmd->add_option("--min-p", o->params.min_p, "drop tokens below min_p x the top probability");
  cmd->add_option("--repetition-penalty", o->params.repetition_penalty, "1 = off");
  cmd->add_option("--presence-penalty", o->params.presence_penalty, "0 = off");
  cmd->add_option("--frequency-penalty", o->params.frequency_penalty, "0 = off");
  cmd->add_option("--seed", o->seed, "sampling seed (reproducible)")->each([o](const std::string&) {
    o->has_seed = true;
  });
  cmd->add_flag("--ignore-eos", o->params.ignore_eos, "do not stop at end-of-sequence tokens");
  cmd->callback([o] { run_generate(*o); });
}

}  // namespace inflight::app

// `inflight perplexity`: the perplexity of a text under a model, and (with --base-model)
// the KL divergence of its next-token distributions against a base model's, in the
// manner of llama.cpp's llama-perplexity (see core/bench/perplexity.hpp for the chunks).
// Runs the CPU backend's forward pass directly: no scheduler, no actors.
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/inflight/commands.hpp"
#include "backends/backend_factory.hpp"
#include "backends/cpu_backend.hpp"
#include "core/bench/perplexity.hpp"
#include "core/model/model_loader.hpp"

namespace inflight::app {
namespace {

struct perplexity_options {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string model_path, tokenizer_path;
  std::string base_model_path;
  std::vector<std::string> base_overrides;
  std::string text_path;
  int ctx = 512;
  int max_chunks = 0;
  int threads = 0;
  std::string json_path;
  std::string save_logits;  ///< llama.cpp's logits file of the model's distributions
  std::string lora;         ///< a LoRA adapter over the model (not the base model)
};

/// A model and a CPU backend with room for one chunk.
struct scoring_model {
  loaded_model model;
  std::unique_ptr<cpu_backend> backend;
  std::shared_ptr<const lora_adapter> adapter;  ///< a LoRA adapter over the model, or none
};

scoring_model load_scoring_model(const perplexity_options& o, const std::string& path,
                                 const std::vector<std::string>& overrides, const std::string& lora = {}) {
  auto d = load_deployment_or_fail(o.config_path, overrides);
  if (!path.empty()) d.model.path = path;
  fetch_hub_models_or_fail(d);
  if (!o.tokenizer_path.empty()) d.model.tokenizer = o.tokenizer_path;
  auto model = load_model(d.model, d.engine.backend);
  if (!model) fail(model.error().message);
  if (o.ctx > model->max_context) {
    fail("--ctx " + std::to_string(o.ctx) + " is longer than the model's context of " +
         std::to_string(model->max_context));
  }
  const int block_size = 16;
  auto bo = cpu_options_of(d.engine);  // engine.kv_dtype applies
  if (o.threads > 0) bo.num_threads = o.threads;
  auto be = cpu_backend::create(model->weights, {block_size, (o.ctx + block_size - 1) / block_size, 0}, bo);
  if (!be) fail(be.error().message);
  if (lora.empty()) return {std::move(*model), std::move(*be)};
  auto adapter = try_load_lora_adapter(lora, model->weights->config);
  if (!adapter) fail(adapter.error().message);
  return {std::move(*model), std::move(*be), std::make_shared<const lora_adapter>(std::move(*adapter))};
}

/// The logits of positions first .. ctx-2 of one chunk, [num_scored x vocab].
std::vector<float> chunk_logits(scoring_model& m, std::vector<token_id> chunk, const bench::perplexity_chunks& plan) {
  const auto& tok = *m.model.tok;
  if (tok.adds_bos() && tok.bos_id()) chunk.front() = *tok.bos_id();
  step_plan step;
  seq_step s;
  s.tokens = std::move(chunk);
  for (int b = 0; b < m.backend->num_kv_blocks(); ++b) s.block_table.push_back(b);
  s.num_tail_logits = plan.ctx - plan.first;  // positions first .. ctx-1; the last predicts nothing
  if (m.adapter) {
    s.adapter = 0;
    step.adapters.push_back(m.adapter);
  }
  step.seqs.push_back(std::move(s));
  auto logits = m.backend->forward(step);
  if (!logits) fail(logits.error().message);
  const auto vocab = std::size_t(m.model.weights->config.vocab_size);
  return {logits->begin(), logits->begin() + std::ptrdiff_t(std::size_t(plan.num_scored()) * vocab)};
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct perplexity_report {
  bench::perplexity_accumulator model, base;
  std::vector<bench::kl_sample> kl;
};

void print_report(const perplexity_options& o, const perplexity_report& r, const bench::perplexity_chunks& plan) {
  std::printf("chunks: %d of %d tokens, %d scored tokens\n", plan.num_chunks, plan.ctx, r.model.count());
  std::printf("perplexity: %.4f +/- %.4f\n", r.model.perplexity(), r.model.perplexity_stderr());
  nlohmann::ordered_json json{{"ctx", plan.ctx},
                              {"chunks", plan.num_chunks},
                              {"scored_tokens", r.model.count()},
                              {"perplexity", r.model.perplexity()},
                              {"perplexity_stderr", r.model.perplexity_stderr()}};
  if (!r.kl.empty()) {
    const auto k = bench::summarize(r.kl);
    std::printf("base perplexity: %.4f +/- %.4f (ratio %.4f)\n", r.base.perplexity(), r.base.perplexity_stderr(),
                r.model.perplexity() / r.base.perplexity());
    std::printf("KL divergence: mean %.6f +/- %.6f, median %.6f, p99 %.6f, p99.9 %.6f, max %.6f\n", k.mean_kl,
                k.kl_stderr, k.median_kl, k.p99_kl, k.p999_kl, k.max_kl);
    std::printf("same top token: %.3f%%, RMS delta p: %.4f%%\n", 100.0 * k.same_top_fraction,
                100.0 * k.rms_delta_p);
    json["base_perplexity"] = r.base.perplexity();
    json["kl"] = {{"mean", k.mean_kl},    {"stderr", k.kl_stderr}, {"median", k.median_kl}, {"p99", k.p99_kl},
                  {"p99_9", k.p999_kl},  {"max", k.max_kl},       {"same_top", k.same_top_fraction},
                  {"rms_delta_p", k.rms_delta_p}};
  }
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    out << json.dump(2) << "\n";
    if (!out) fail("cannot write " + o.json_path);
  }
}

void run_perplexity(const perplexity_options& o) {
  auto model = load_scoring_model(o, o.model_path, o.overrides, o.lora);
  std::optional<scoring_model> base;
  if (!o.base_model_path.empty() || !o.base_overrides.empty()) {
    base = load_scoring_model(o, o.base_model_path.empty() ? o.model_path : o.base_model_path, o.base_overrides);
    if (base->model.weights->config.vocab_size != model.model.weights->config.vocab_size) {
      fail("the base model's vocabulary differs from the model's");
    }
  }
  const auto& tok = *model.model.tok;
  const auto tokens = tok.encode(read_text(o.text_path), tok.adds_bos());
  const auto plan = bench::plan_perplexity_chunks(int(tokens.size()), o.ctx, o.max_chunks);
  if (plan.num_chunks == 0) {
    fail("the text has " + std::to_string(tokens.size()) + " tokens, fewer than one chunk of --ctx " +
         std::to_string(o.ctx));
  }
  const auto vocab = std::size_t(model.model.weights->config.vocab_size);
  std::ofstream logits_file;
  std::vector<std::uint16_t> encoded(std::size_t(bench::llama_row_values(int(vocab))));
  if (!o.save_logits.empty()) {
    logits_file.open(o.save_logits, std::ios::binary | std::ios::trunc);
    const std::vector<std::int32_t> ids(tokens.begin(), tokens.begin() + std::ptrdiff_t(plan.num_chunks) * plan.ctx);
    logits_file << bench::llama_logits_head(plan.ctx, int(vocab), ids, plan.num_chunks);
    if (!logits_file) fail("cannot write " + o.save_logits);
  }
  perplexity_report report;
  for (int c = 0; c < plan.num_chunks; ++c) {
    const auto begin = tokens.begin() + std::ptrdiff_t(c) * plan.ctx;
    const std::vector<token_id> chunk(begin, begin + plan.ctx);
    const auto logits = chunk_logits(model, chunk, plan);
    const auto base_logits = base ? chunk_logits(*base, chunk, plan) : std::vector<float>{};
    for (int j = 0; j < plan.num_scored(); ++j) {
      const token_id next = chunk[std::size_t(plan.first + j + 1)];
      const std::span<const float> row(logits.data() + std::size_t(j) * vocab, vocab);
      report.model.add(row, next);
      if (logits_file.is_open()) {
        bench::encode_llama_log_probs(row, encoded.data());
        logits_file.write(reinterpret_cast<const char*>(encoded.data()), std::streamsize(encoded.size() * 2));
      }
      if (!base) continue;
      const std::span<const float> base_row(base_logits.data() + std::size_t(j) * vocab, vocab);
      report.base.add(base_row, next);
      report.kl.push_back(bench::compare_distributions(base_row, row, next));
    }
    std::fprintf(stderr, "[%d/%d] perplexity %.4f\n", c + 1, plan.num_chunks, report.model.perplexity());
  }
  if (logits_file.is_open() && !logits_file.flush()) fail("cannot write " + o.save_logits);
  print_report(o, report, plan);
}

}  // namespace

void add_perplexity_command(CLI::App& app) {
  auto o = std::make_shared<perplexity_options>();
  auto* cmd = app.add_subcommand(
      "perplexity", "Perplexity of a text file, and KL divergence against a base model (as llama-perplexity)");
  cmd->add_option("--config", o->config_path, "deployment TOML (default: built-in defaults)");
  cmd->add_option("--set", o->overrides, "override a config key of the model: --set model.weight_dtype=q8_0");
  cmd->add_option("--model", o->model_path, "the model: GGUF file, llama2.c checkpoint or Hugging Face folder");
  cmd->add_option("--tokenizer", o->tokenizer_path, "tokenizer file (llama2.c checkpoints)");
  cmd->add_option("--base-model", o->base_model_path,
                  "the base model to compare with (KL divergence, top-1 agreement); default: --model");
  cmd->add_option("--base-set", o->base_overrides, "override a config key of the base model only");
  cmd->add_option("-f,--file", o->text_path, "the text")->required();
  cmd->add_option("--ctx", o->ctx, "tokens per chunk; the second half of each is scored")
      ->check(CLI::Range(4, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--chunks", o->max_chunks, "at most this many chunks (0: all)");
  cmd->add_option("--threads", o->threads, "compute threads (0: one per core)");
  cmd->add_option("--json", o->json_path, "also write the figures as JSON");
  cmd->add_option("--lora", o->lora, "a LoRA adapter over --model (a PEFT folder or a GGUF LoRA file; not the base model)");
  cmd->add_option("--save-logits", o->save_logits,
                  "write the model's distributions as llama.cpp's logits file: llama-perplexity "
                  "--kl-divergence-base FILE --kl-divergence scores another implementation against them");
  cmd->callback([o] { run_perplexity(*o); });
}

}  // namespace inflight::app

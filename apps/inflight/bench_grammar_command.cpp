// `inflight bench grammar`: the grammar layer alone against a real vocabulary: cold
// compile time, token_index build time and next-token mask time on random walks.
#include <chrono>
#include <cstdio>

#include "apps/inflight/bench_report.hpp"
#include "apps/inflight/commands.hpp"
#include "core/bench/grammar_bench.hpp"
#include "core/grammar/tokenizer_vocab.hpp"
#include "core/model/model_loader.hpp"

namespace inflight::app {
namespace {

struct grammar_options {
  std::string tokenizer_path;
  std::string schemas = "builtin";
  int num_walks = 20;
  int max_steps = 256;
  int num_compiles = 10;
  std::uint64_t seed = 0;
  std::string result_json;
  bool no_share_copies = false;
  bool no_leo = false;
};

// The project's targets at a 150k vocabulary.
constexpr double target_mask_mean_s = 50e-6;
constexpr double target_mask_p99_s = 0.5e-3;
constexpr double target_compile_p50_s = 10e-3;

double pct(const bench::metric_stats& m, double p) {
  for (const auto& [q, v] : m.percentiles) if (q == p) return v;
  return m.median;
}

void print_row(const std::string& name, std::size_t positions, const bench::metric_stats& compile, double index_ms,
               const bench::metric_stats& mask, int walks, int finished, int valid) {
  std::printf("%-14s %9zu %9.3f %9.3f %11.1f %9.2f %9.2f %9.2f %8d %5d %8d %6d\n", name.c_str(), positions,
              pct(compile, 50) * 1e3, pct(compile, 99) * 1e3, index_ms, mask.mean * 1e6, pct(mask, 50) * 1e6,
              pct(mask, 99) * 1e6, mask.count, walks, finished, valid);
}

const char* verdict(bool ok) { return ok ? "meets" : "MISSES"; }

void run_bench_grammar(const grammar_options& o) {
  auto tok = try_load_tokenizer(o.tokenizer_path);
  if (!tok) fail(tok.error().message);
  auto schemas = bench::load_schemas(o.schemas);
  if (!schemas) fail(schemas.error().message);
  auto t0 = std::chrono::steady_clock::now();
  auto vocab = make_grammar_vocab(**tok);
  const double vocab_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("vocabulary: %d tokens (%zu with text) from %s; sorted for the grammar in %.1f ms\n", vocab->size(),
              vocab->sorted().size(), o.tokenizer_path.c_str(), vocab_ms);
  std::printf("%d cold compiles, %d random walks of at most %d steps per schema (seed %llu)\n\n", o.num_compiles,
              o.num_walks, o.max_steps, (unsigned long long)o.seed);
  std::printf("%-14s %9s %9s %9s %11s %9s %9s %9s %8s %5s %8s %6s\n", "schema", "positions", "compile", "compile",
              "index build", "mask", "mask", "mask", "steps", "walks", "finished", "valid");
  std::printf("%-14s %9s %9s %9s %11s %9s %9s %9s %8s %5s %8s %6s\n", "", "", "p50 ms", "p99 ms", "ms", "mean us",
              "p50 us", "p99 us", "", "", "", "JSON");
  bench::grammar_bench_options bo{o.num_compiles, o.num_walks, o.max_steps};
  bo.share_copies = !o.no_share_copies;
  bo.leo = !o.no_leo;
  std::mt19937_64 rng(o.seed);
  std::vector<double> all_compile, all_mask, all_index;
  int walks = 0, finished = 0, valid = 0;
  std::size_t positions = 0;
  nlohmann::json doc = {{"tokenizer", o.tokenizer_path}, {"vocab_size", vocab->size()}, {"schemas", nlohmann::json::array()}};
  const std::vector<double> percentiles = {50, 99};
  for (const auto& schema : *schemas) {
    auto t = bench::measure_schema(schema, vocab, bo, rng);
    if (!t) fail(t.error().message);
    const auto compile = bench::describe(t->compile_s, percentiles);
    const auto mask = bench::describe(t->mask_s, percentiles);
    print_row(t->name, t->num_positions, compile, t->index_build_s * 1e3, mask, t->num_walks, t->num_finished,
              t->num_valid_json);
    all_compile.insert(all_compile.end(), t->compile_s.begin(), t->compile_s.end());
    all_mask.insert(all_mask.end(), t->mask_s.begin(), t->mask_s.end());
    all_index.push_back(t->index_build_s);
    walks += t->num_walks, finished += t->num_finished, valid += t->num_valid_json, positions += t->num_positions;
    doc["schemas"].push_back({{"name", t->name}, {"positions", t->num_positions}, {"compile_s", to_json(compile)},
                              {"index_build_s", t->index_build_s}, {"mask_s", to_json(mask)},
                              {"walks", t->num_walks}, {"finished", t->num_finished}, {"valid_json", t->num_valid_json}});
  }
  const auto compile = bench::describe(all_compile, percentiles);
  const auto mask = bench::describe(all_mask, percentiles);
  const auto index = bench::describe(all_index, percentiles);
  print_row("all", positions, compile, index.mean * 1e3, mask, walks, finished, valid);
  std::printf("(compile: schema text to grammar, no cache; index build: the token_index of one grammar over the "
              "vocabulary, all positions; mask: one fill_next_token_mask; finished: walks that reached a complete "
              "value, valid JSON: of them, texts that parse)\n\n");
  std::printf("targets: mask mean %.1f us <= 50 us: %s; mask p99 %.1f us <= 500 us: %s; compile p50 %.3f ms <= 10 ms: "
              "%s (with the index build: mean %.1f ms)\n",
              mask.mean * 1e6, verdict(mask.mean <= target_mask_mean_s), pct(mask, 99) * 1e6,
              verdict(pct(mask, 99) <= target_mask_p99_s), pct(compile, 50) * 1e3,
              verdict(pct(compile, 50) <= target_compile_p50_s), (pct(compile, 50) + index.mean) * 1e3);
  if (o.result_json.empty()) return;
  doc["all"] = {{"compile_s", to_json(compile)}, {"index_build_s", to_json(index)}, {"mask_s", to_json(mask)},
                {"walks", walks}, {"finished", finished}, {"valid_json", valid}};
  write_json_file(o.result_json, doc);
}

}  // namespace

void add_bench_grammar_command(CLI::App& bench) {
  auto o = std::make_shared<grammar_options>();
  auto* cmd = bench.add_subcommand("grammar", "Constrained decoding alone: compile, token index and mask times over a vocabulary");
  cmd->add_option("--tokenizer", o->tokenizer_path, "tokenizer.json, tokenizer.bin, a model folder or a GGUF file")
      ->required();
  cmd->add_option("--schemas", o->schemas, "builtin, or a file: a JSON array of schemas, an object name -> schema, or JSONL")
      ->capture_default_str();
  cmd->add_option("--walks", o->num_walks, "random walks per schema")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-steps", o->max_steps, "tokens per walk at most")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--compiles", o->num_compiles, "cold compiles per schema")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--seed", o->seed, "seed of the walks")->capture_default_str();
  cmd->add_option("--result-json", o->result_json, "write the figures to this file");
  cmd->add_flag("--no-share-copies", o->no_share_copies,
                "classify every copy of a bounded repetition alone (the token index without sharing, to compare)");
  cmd->add_flag("--no-leo", o->no_leo,
                "build the token index with the plain Earley completions (no one-step tail calls), to compare");
  cmd->callback([o] { run_bench_grammar(*o); });
}

}  // namespace inflight::app

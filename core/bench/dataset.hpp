#pragma once
/// Benchmark prompts: random prompts of given lengths, the named workloads of
/// ../shared/workloads/README.md (variance, latency, procurement, interference,
/// overhead, prefix, prefix-chat; structured in structured_workload.hpp), and JSONL files. Everything is drawn from one seeded
/// generator, so a seed gives the same prompts on every run.

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/types.hpp"

namespace inflight::bench {

/// One request of a benchmark.
struct bench_prompt {
  std::vector<token_id> prompt_ids;  ///< the prompt as token ids (empty when `prompt_text` is used)
  std::string prompt_text;           ///< the prompt as text
  int input_len = 0;                 ///< prompt tokens (for text: as generated; the server's count may differ)
  int output_len = 0;                ///< tokens it generates (bench serve/offline send it as max_tokens); 0 = the caller decides
  double arrival_s = -1.0;           ///< scheduled send time; < 0 = from the arrival process
  std::string tag;                   ///< a group name, e.g. interference's "decode" / "long"
  std::string json_schema;           ///< structured: the JSON Schema the output must follow ("" = none)

  // How the request ends, where only a simulation can choose it (simulate; bench serve
  // and bench offline replay output_len tokens exactly, under ignore_eos):
  /// The request's limit; above output_len, the output ends on its own after output_len
  /// tokens: by EOS, or by a stop string when `ends_by_stop_string`. 0 = output_len.
  int max_tokens = 0;
  bool ends_by_stop_string = false;
  /// The client cancels this long after its arrival, if it has not finished; < 0 = never.
  double cancel_after_s = -1.0;
  /// A scoring request (rerank): prefill-only, its score rows' logits after the prompt,
  /// no token; `group` is the call (one query's documents) it belongs to.
  bool is_score = false;
  int group = -1;
};

/// How prompts are written: token ids (exact lengths) or random text.
enum class prompt_format { ids, text };

struct random_options {
  int num_prompts = 1000;
  int input_len = 1024;
  int output_len = 128;
  double range_ratio = 0.0;   ///< lengths uniform in [L(1-r), L(1+r)], 0 <= r < 1
  int vocab_size = 259;       ///< token ids are drawn from [first_token_id, vocab_size)
  int first_token_id = 3;     ///< skips the usual special tokens (unk, bos, eos)
  prompt_format format = prompt_format::ids;
};

/// Inclusive bounds of the uniform draw: [floor(L(1-r)), ceil(L(1+r))], at least 1.
std::pair<int, int> length_bounds(int length, double range_ratio);

/// An output length from an exponential distribution of `mean`, rounded up, redrawn
/// until it is <= cap.
int draw_exponential_length(double mean, int cap, std::mt19937_64& rng);

/// A prompt of `length` tokens (ids) or characters (text).
bench_prompt make_prompt(int length, const random_options& o, std::mt19937_64& rng);

result<std::vector<bench_prompt>> random_dataset(const random_options& o, std::mt19937_64& rng);

/// Size of a named workload.
enum class workload_size { small, full };
result<workload_size> parse_workload_size(std::string_view text);

struct workload_options {
  std::string name;                   ///< variance | latency | procurement | interference | overhead | prefix | prefix-chat | structured | copy
  workload_size size = workload_size::small;
  int cap = 0;                        ///< variance: output cap (0 = the largest of the size)
  int num_prompts = 0;                ///< 0 = the workload's own count
  int vocab_size = 259;
  prompt_format format = prompt_format::ids;
};

/// The prompts of a named workload; unknown names and caps are errors.
result<std::vector<bench_prompt>> workload_dataset(const workload_options& o, std::mt19937_64& rng);

/// The workload names, for help texts.
std::vector<std::string> workload_names();

/// Reads a JSONL file: one object per line with "prompt" (a string or a list of token
/// ids), or "input_len" alone (a trace of lengths: the prompt is drawn by
/// fill_random_prompts), and optionally "output_len" or "max_tokens" and "arrival_s"
/// (seconds from the trace's start: when to send it, where no arrival process is
/// asked for). Blank lines are skipped.
result<std::vector<bench_prompt>> load_jsonl_dataset(const std::filesystem::path& path);

/// Draws a random prompt of its input_len for every entry that has none (a trace of
/// lengths), keeping its output length and arrival time.
void fill_random_prompts(std::vector<bench_prompt>& prompts, int vocab_size, prompt_format format,
                         std::mt19937_64& rng);

/// A JSONL file's requests (load_jsonl_dataset), the first `num_prompts` of them (0 =
/// all), the prompts of a trace of lengths drawn in `format` (fill_random_prompts).
/// With `ids_only`, a text prompt is refused: token ids are needed where no tokenizer
/// is (bench offline, simulate).
result<std::vector<bench_prompt>> load_trace(const std::filesystem::path& path, int num_prompts, int vocab_size,
                                             prompt_format format, bool ids_only, std::mt19937_64& rng);

}  // namespace inflight::bench

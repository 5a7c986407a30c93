#include "core/bench/dataset.hpp"

#include "core/bench/structured_workload.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>

namespace inflight::bench {

std::pair<int, int> length_bounds(int length, double range_ratio) {
  const int lo = std::max(1, int(std::floor(length * (1.0 - range_ratio))));
  const int hi = std::max(lo, int(std::ceil(length * (1.0 + range_ratio))));
  return {lo, hi};
}

int draw_exponential_length(double mean, int cap, std::mt19937_64& rng) {
  std::exponential_distribution<double> exp(1.0 / mean);
  for (;;) {
    const int n = std::max(1, int(std::ceil(exp(rng))));
    if (n <= cap) return n;
  }
}

namespace {

/// Random lowercase words separated by single spaces, exactly `length` bytes long
/// (one token per byte with a byte-level tokenizer).
std::string random_text(int length, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> letter('a', 'z'), word_len(2, 8);
  std::string out;
  out.reserve(std::size_t(length));
  int left_in_word = word_len(rng);
  while (int(out.size()) < length) {
    if (left_in_word == 0 && !out.empty() && int(out.size()) + 1 < length) {
      out.push_back(' ');
      left_in_word = word_len(rng);
      continue;
    }
    out.push_back(char(letter(rng)));
    left_in_word = std::max(0, left_in_word - 1);
  }
  return out;
}

}  // namespace

bench_prompt make_prompt(int length, const random_options& o, std::mt19937_64& rng) {
  bench_prompt p;
  p.input_len = length;
  if (o.format == prompt_format::text) {
    p.prompt_text = random_text(length, rng);
    return p;
  }
  std::uniform_int_distribution<int> id(o.first_token_id, o.vocab_size - 1);
  p.prompt_ids.resize(std::size_t(length));
  for (auto& t : p.prompt_ids) t = token_id(id(rng));
  return p;
}

result<std::vector<bench_prompt>> random_dataset(const random_options& o, std::mt19937_64& rng) {
  if (o.num_prompts <= 0) return make_error(errc::invalid_argument, "num-prompts must be positive");
  if (o.input_len <= 0 || o.output_len <= 0) return make_error(errc::invalid_argument, "input and output lengths must be positive");
  if (o.range_ratio < 0.0 || o.range_ratio >= 1.0) return make_error(errc::invalid_argument, "range-ratio must be in [0, 1)");
  if (o.vocab_size <= o.first_token_id) return make_error(errc::invalid_argument, "vocab-size is too small");
  const auto [in_lo, in_hi] = length_bounds(o.input_len, o.range_ratio);
  const auto [out_lo, out_hi] = length_bounds(o.output_len, o.range_ratio);
  std::uniform_int_distribution<int> in_len(in_lo, in_hi), out_len(out_lo, out_hi);
  std::vector<bench_prompt> out;
  for (int i = 0; i < o.num_prompts; ++i) {
    const int in = in_len(rng);
    auto p = make_prompt(in, o, rng);
    p.output_len = out_len(rng);
    out.push_back(std::move(p));
  }
  return out;
}

result<workload_size> parse_workload_size(std::string_view text) {
  if (text == "small") return workload_size::small;
  if (text == "full") return workload_size::full;
  return make_error(errc::invalid_argument, "size must be small or full, got '" + std::string(text) + "'");
}

std::vector<std::string> workload_names() {
  return {"variance", "latency", "procurement", "interference", "overhead", "prefix", "prefix-chat", "structured", "copy"};
}

namespace {

random_options prompt_options(const workload_options& o) {
  random_options r;
  r.vocab_size = o.vocab_size;
  r.format = o.format;
  return r;
}

int count_or(const workload_options& o, int full, int small) {
  if (o.num_prompts > 0) return o.num_prompts;
  return o.size == workload_size::full ? full : small;
}

result<std::vector<bench_prompt>> variance_workload(const workload_options& o, std::mt19937_64& rng) {
  const bool full = o.size == workload_size::full;
  const std::vector<int> caps = full ? std::vector<int>{32, 128, 512, 1536} : std::vector<int>{8, 32, 128, 384};
  const int cap = o.cap == 0 ? caps.back() : o.cap;
  if (std::find(caps.begin(), caps.end(), cap) == caps.end()) {
    std::string allowed;
    for (int c : caps) allowed += (allowed.empty() ? "" : ", ") + std::to_string(c);
    return make_error(errc::invalid_argument, "variance: cap " + std::to_string(cap) + " is not one of " + allowed);
  }
  const auto ro = prompt_options(o);
  std::vector<bench_prompt> out;
  for (int i = 0, n = count_or(o, 1000, 200); i < n; ++i) {
    auto p = make_prompt(full ? 512 : 64, ro, rng);
    p.output_len = draw_exponential_length(full ? 128.0 : 32.0, cap, rng);
    p.arrival_s = 0.0;
    out.push_back(std::move(p));
  }
  return out;
}

result<std::vector<bench_prompt>> latency_workload(const workload_options& o, std::mt19937_64& rng) {
  const bool full = o.size == workload_size::full;
  const auto ro = prompt_options(o);
  std::uniform_int_distribution<int> in_len(full ? 128 : 16, full ? 384 : 48);
  std::vector<bench_prompt> out;
  for (int i = 0, n = count_or(o, 1000, 200); i < n; ++i) {
    auto p = make_prompt(in_len(rng), ro, rng);
    p.output_len = draw_exponential_length(full ? 128.0 : 32.0, full ? 1536 : 384, rng);
    out.push_back(std::move(p));
  }
  return out;
}

result<std::vector<bench_prompt>> procurement_workload(const workload_options& o, std::mt19937_64& rng) {
  const bool full = o.size == workload_size::full;
  const auto ro = prompt_options(o);
  std::uniform_int_distribution<int> in_len(full ? 1500 : 150, full ? 2000 : 200);
  std::vector<bench_prompt> out;
  for (int i = 0, n = count_or(o, 256, 64); i < n; ++i) {
    auto p = make_prompt(in_len(rng), ro, rng);
    p.output_len = full ? 500 : 50;
    out.push_back(std::move(p));
  }
  return out;
}

/// 32 decode streams at t = 0, then one long prompt every interval (the first after one).
result<std::vector<bench_prompt>> interference_workload(const workload_options& o, std::mt19937_64& rng) {
  const bool full = o.size == workload_size::full;
  const auto ro = prompt_options(o);
  std::vector<bench_prompt> out;
  for (int i = 0; i < 32; ++i) {
    auto p = make_prompt(64, ro, rng);
    p.output_len = full ? 1024 : 256;
    p.arrival_s = 0.0;
    p.tag = "decode";
    out.push_back(std::move(p));
  }
  const double interval = full ? 2.0 : 0.5;
  for (int i = 0, n = count_or(o, 16, 8); i < n; ++i) {
    auto p = make_prompt(full ? 8192 : 1024, ro, rng);
    p.output_len = 16;
    p.arrival_s = interval * (i + 1);
    p.tag = "long";
    out.push_back(std::move(p));
  }
  return out;
}

/// Identical short requests, all at t = 0: the engine's own cost per step.
result<std::vector<bench_prompt>> overhead_workload(const workload_options& o, std::mt19937_64& rng) {
  const auto ro = prompt_options(o);
  std::vector<bench_prompt> out;
  for (int i = 0, n = count_or(o, 64, 64); i < n; ++i) {
    auto p = make_prompt(16, ro, rng);
    p.output_len = o.size == workload_size::full ? 256 : 64;
    p.arrival_s = 0.0;
    out.push_back(std::move(p));
  }
  return out;
}

/// `tail` appended to `head`, in the prompt's format (ids or text).
bench_prompt concat(const bench_prompt& head, const bench_prompt& tail) {
  bench_prompt p = head;
  p.prompt_ids.insert(p.prompt_ids.end(), tail.prompt_ids.begin(), tail.prompt_ids.end());
  p.prompt_text += tail.prompt_text;
  p.input_len += tail.input_len;
  return p;
}

/// Groups of 8 requests sharing a long prefix, each with a short unique suffix; the
/// requests of all groups shuffled. No schedule of its own (the arrival process).
result<std::vector<bench_prompt>> prefix_workload(const workload_options& o, std::mt19937_64& rng) {
  const bool full = o.size == workload_size::full;
  const auto ro = prompt_options(o);
  const int num_groups = count_or(o, 256, 64) / 8;
  if (num_groups < 1) return make_error(errc::invalid_argument, "prefix: needs at least 8 prompts (groups of 8)");
  std::vector<bench_prompt> out;
  for (int g = 0; g < num_groups; ++g) {
    const auto shared = make_prompt(full ? 1024 : 256, ro, rng);
    for (int i = 0; i < 8; ++i) {
      auto p = concat(shared, make_prompt(full ? 64 : 16, ro, rng));
      p.output_len = full ? 32 : 8;
      p.tag = "group" + std::to_string(g);
      out.push_back(std::move(p));
    }
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

/// Sentences of the copy workload's passages: plain story English, which small models
/// trained on children's stories (stories260K) and large ones alike read and write.
const std::vector<std::string>& story_sentences() {
  static const std::vector<std::string> sentences = {
      "Once upon a time, there was a little girl named Lily.",
      "She had a red ball that she loved very much.",
      "Every day she played with the ball in the big green park.",
      "One day, a small brown dog ran up to her and barked.",
      "Lily was scared at first, but the dog wagged its tail.",
      "The dog wanted to play with the red ball too.",
      "Lily threw the ball and the dog ran after it.",
      "They played together until the sun went down.",
      "Tom was a boy who liked to build tall towers with blocks.",
      "His mom gave him a box of blue and yellow blocks.",
      "He built a tower that was taller than his little sister.",
      "Then the tower fell down and all the blocks were on the floor.",
      "Tom did not cry, he started to build it again.",
      "A little bird lived in a tree near the river.",
      "The bird sang a happy song every morning.",
      "One morning it saw a big cat under the tree.",
      "The bird flew high into the sky so the cat could not catch it.",
      "Sam and his friend Anna went to the beach with their dad.",
      "They made a sand castle with a big wall around it.",
      "A wave came and washed the castle away.",
      "Anna laughed and said they could make a new one.",
      "The old man had a garden full of flowers.",
      "He gave water to the flowers every day.",
      "The flowers grew big and bright in the warm sun.",
  };
  return sentences;
}

/// Continue a passage seen before (speculative decoding): a passage of story sentences,
/// then its first quarter again, so that what follows is the rest of the passage (a model
/// that copies, as trained ones do from their context, writes it; a drafter that looks
/// the text up proposes it). Passages of 10 sentences (small: 6), about 550 characters
/// (small: 330); 128 output tokens (small: 64); 64 requests (small: 16), all at t = 0.
/// Text prompts: the server's tokenizer (bench offline: the model's) makes the tokens.
result<std::vector<bench_prompt>> copy_workload(const workload_options& o, std::mt19937_64& rng) {
  const bool full = o.size == workload_size::full;
  const auto& sentences = story_sentences();
  std::uniform_int_distribution<std::size_t> pick(0, sentences.size() - 1);
  std::vector<bench_prompt> out;
  for (int i = 0; i < count_or(o, 64, 16); ++i) {
    std::string passage;
    for (int k = 0; k < (full ? 10 : 6); ++k) passage += (k ? " " : "") + sentences[pick(rng)];
    std::string again = passage.substr(0, passage.size() / 4);
    again = again.substr(0, again.rfind(' '));  // whole words
    bench_prompt p;
    p.prompt_text = passage + "\n\n" + again;
    p.input_len = int(p.prompt_text.size());
    p.output_len = full ? 128 : 64;
    p.tag = "copy";
    out.push_back(std::move(p));
  }
  return out;
}

/// Multi-turn chat: each turn resends the history (earlier turns' prompts and replies)
/// plus new user tokens. The replies in the history are random tokens of the reply's
/// length, not the model's answer (prompts are fixed before the run). Turn t of
/// conversation c is sent at (t + c / C) * gap: conversations staggered, one turn per
/// conversation every `gap` seconds.
result<std::vector<bench_prompt>> prefix_chat_workload(const workload_options& o, std::mt19937_64& rng) {
  const bool full = o.size == workload_size::full;
  const auto ro = prompt_options(o);
  const int num_turns = full ? 6 : 4, turn_len = full ? 64 : 32, reply_len = full ? 64 : 16;
  const int num_chats = std::max(1, count_or(o, 16 * num_turns, 8 * num_turns) / num_turns);
  const double gap = full ? 4.0 : 1.0;
  std::vector<bench_prompt> out;
  for (int c = 0; c < num_chats; ++c) {
    bench_prompt history = make_prompt(turn_len, ro, rng);
    for (int t = 0; t < num_turns; ++t) {
      if (t > 0) history = concat(concat(history, make_prompt(reply_len, ro, rng)), make_prompt(turn_len, ro, rng));
      auto p = history;
      p.output_len = reply_len;
      p.arrival_s = (t + double(c) / num_chats) * gap;
      p.tag = "turn" + std::to_string(t);
      out.push_back(std::move(p));
    }
  }
  return out;
}

/// The variance workload with `builtin_schemas()[i % n]` as request i's json_schema.
result<std::vector<bench_prompt>> structured_workload(const workload_options& o, std::mt19937_64& rng) {
  auto prompts = variance_workload(o, rng);
  if (!prompts) return prompts;
  const auto& schemas = builtin_schemas();
  for (std::size_t i = 0; i < prompts->size(); ++i) {
    (*prompts)[i].json_schema = schemas[i % schemas.size()].text;
    (*prompts)[i].tag = schemas[i % schemas.size()].name;
  }
  return prompts;
}

}  // namespace

result<std::vector<bench_prompt>> workload_dataset(const workload_options& o, std::mt19937_64& rng) {
  if (o.vocab_size <= 3) return make_error(errc::invalid_argument, "vocab-size is too small");
  if (o.cap != 0 && o.name != "variance" && o.name != "structured")
    return make_error(errc::invalid_argument, "--cap applies to the variance and structured workloads only");
  if (o.name == "variance") return variance_workload(o, rng);
  if (o.name == "latency") return latency_workload(o, rng);
  if (o.name == "procurement") return procurement_workload(o, rng);
  if (o.name == "interference") return interference_workload(o, rng);
  if (o.name == "overhead") return overhead_workload(o, rng);
  if (o.name == "prefix") return prefix_workload(o, rng);
  if (o.name == "prefix-chat") return prefix_chat_workload(o, rng);
  if (o.name == "structured") return structured_workload(o, rng);
  if (o.name == "copy") return copy_workload(o, rng);
  return make_error(errc::invalid_argument, "unknown workload '" + o.name +
                                                "' (variance, latency, procurement, interference, overhead, prefix, "
                                                "prefix-chat, structured, copy)");
}

namespace {

result<bench_prompt> parse_jsonl_line(const std::string& line, const std::string& where) {
  auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return make_error(errc::invalid_argument, where + ": not a JSON object");
  bench_prompt p;
  const auto prompt = j.find("prompt");
  const auto input_len = j.find("input_len");
  if (prompt == j.end() && input_len == j.end())
    return make_error(errc::invalid_argument, where + ": no \"prompt\" (nor \"input_len\")");
  if (prompt == j.end()) {  // a trace of lengths: the prompt is drawn later (fill_random_prompts)
    if (!input_len->is_number_integer() || input_len->get<int>() <= 0)
      return make_error(errc::invalid_argument, where + ": \"input_len\" must be a positive integer");
    p.input_len = input_len->get<int>();
  } else if (prompt->is_string()) {
    p.prompt_text = prompt->get<std::string>();
    p.input_len = int(p.prompt_text.size());
  } else if (prompt->is_array() && !prompt->empty() &&
             std::all_of(prompt->begin(), prompt->end(), [](const auto& v) { return v.is_number_integer(); })) {
    for (const auto& v : *prompt) p.prompt_ids.push_back(v.template get<token_id>());
    p.input_len = int(p.prompt_ids.size());
  } else {
    return make_error(errc::invalid_argument, where + ": \"prompt\" must be a string or a list of token ids");
  }
  // "output_len": what it generates; "max_tokens": its limit. Given both, a limit above
  // the output means the output ends on its own (what only simulate can play).
  int lengths[2] = {0, 0};
  const char* keys[2] = {"output_len", "max_tokens"};
  for (int k = 0; k < 2; ++k) {
    if (auto it = j.find(keys[k]); it != j.end()) {
      if (!it->is_number_integer() || it->get<int>() <= 0) {
        return make_error(errc::invalid_argument, where + ": \"" + keys[k] + "\" must be a positive integer");
      }
      lengths[k] = it->get<int>();
    }
  }
  p.output_len = lengths[0] > 0 ? (lengths[1] > 0 ? std::min(lengths[0], lengths[1]) : lengths[0]) : lengths[1];
  if (lengths[0] > 0 && lengths[1] > lengths[0]) p.max_tokens = lengths[1];
  if (auto it = j.find("stop"); it != j.end()) {
    if (!it->is_boolean()) return make_error(errc::invalid_argument, where + ": \"stop\" must be true or false");
    p.ends_by_stop_string = it->get<bool>();
  }
  if (p.ends_by_stop_string && p.max_tokens == 0)
    return make_error(errc::invalid_argument, where + ": \"stop\": true needs \"max_tokens\" above \"output_len\" "
                                                      "(the stop string ends the output before its limit)");
  if (auto it = j.find("cancel_after_s"); it != j.end()) {
    if (!it->is_number() || !(it->get<double>() >= 0) || !std::isfinite(it->get<double>()))
      return make_error(errc::invalid_argument, where + ": \"cancel_after_s\" must be a number of seconds >= 0");
    p.cancel_after_s = it->get<double>();
  }
  if (auto it = j.find("arrival_s"); it != j.end()) {
    if (!it->is_number() || !(it->get<double>() >= 0) || !std::isfinite(it->get<double>()))
      return make_error(errc::invalid_argument, where + ": \"arrival_s\" must be a number of seconds >= 0");
    p.arrival_s = it->get<double>();
  }
  return p;
}

}  // namespace

void fill_random_prompts(std::vector<bench_prompt>& prompts, int vocab_size, prompt_format format,
                         std::mt19937_64& rng) {
  random_options o;
  o.vocab_size = vocab_size;
  o.format = format;
  for (auto& p : prompts) {
    if (!p.prompt_ids.empty() || !p.prompt_text.empty()) continue;
    const bench_prompt trace = p;
    p = make_prompt(p.input_len, o, rng);
    p.output_len = trace.output_len;
    p.arrival_s = trace.arrival_s;
    p.max_tokens = trace.max_tokens;
    p.ends_by_stop_string = trace.ends_by_stop_string;
    p.cancel_after_s = trace.cancel_after_s;
  }
}

result<std::vector<bench_prompt>> load_trace(const std::filesystem::path& path, int num_prompts, int vocab_size,
                                             prompt_format format, bool ids_only, std::mt19937_64& rng) {
  auto prompts = load_jsonl_dataset(path);
  if (!prompts) return prompts;
  if (num_prompts > 0 && int(prompts->size()) > num_prompts) prompts->resize(std::size_t(num_prompts));
  if (ids_only) {
    for (std::size_t i = 0; i < prompts->size(); ++i) {
      if (!(*prompts)[i].prompt_text.empty())
        return make_error(errc::invalid_argument, path.string() + ": request " + std::to_string(i + 1) +
                                                      " has a text prompt; token ids (or input_len) are needed here");
    }
  }
  fill_random_prompts(*prompts, vocab_size, format, rng);
  return prompts;
}

result<std::vector<bench_prompt>> load_jsonl_dataset(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return make_error(errc::io_error, path.string() + ": cannot open");
  std::vector<bench_prompt> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto p = parse_jsonl_line(line, path.string() + ":" + std::to_string(number));
    if (!p) return std::unexpected(p.error());
    out.push_back(std::move(*p));
  }
  if (out.empty()) return make_error(errc::invalid_argument, path.string() + ": no prompts");
  return out;
}

}  // namespace inflight::bench

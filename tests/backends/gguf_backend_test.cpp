// GGUF models on the CPU backend: stories260K written as GGUF and loaded through
// model.format = auto computes what the llama2.c checkpoint computes (logits bit for
// bit, the reference greedy text), and the row reordering of a half-RoPE model and
// quantized matrices leave outputs unchanged.
#include <catch2/catch.hpp>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/gguf_model_writer.hpp"
#include "core/model/formats/llama2c.hpp"
#include "core/model/model_loader.hpp"
#include "core/model/tokenizer/llama2c_tokenizer.hpp"
#include "tests/backends/toy_driver.hpp"
#include "tests/shared_data.hpp"
#include "tests/test_shapes.hpp"

using namespace inflight;
namespace fs = std::filesystem;

namespace {

fs::path temp_path(const std::string& name) {
  const auto dir = fs::temp_directory_path() / "inflight_gguf_backend_test";
  fs::create_directories(dir);
  return dir / name;
}

std::unique_ptr<cpu_backend> make_backend(const std::shared_ptr<const model_weights>& w) {
  auto be = cpu_backend::create(w, kv_cache_config{16, 64, 0});
  REQUIRE(be.has_value());
  return std::move(*be);
}

/// Logits after the whole prompt.
std::vector<float> logits_of(const std::shared_ptr<const model_weights>& w, const std::vector<token_id>& prompt) {
  auto be = make_backend(w);
  step_plan plan;
  seq_step st;
  st.tokens = prompt;
  st.block_table = {0, 1, 2, 3};
  st.do_sample = true;
  plan.seqs.push_back(st);
  auto logits = be->forward(plan);
  REQUIRE(logits.has_value());
  return {logits->begin(), logits->end()};
}

/// run.c's loop (as tests/backends/stories260k_test.cpp): one position per step, prompt
/// tokens forced, arg-max after, stop at BOS, unprintable single bytes dropped.
std::string greedy_text(const loaded_model& m, const std::string& prompt, int steps) {
  auto be = make_backend(m.weights);
  const auto ids = m.tok->encode(prompt, true);
  std::string out;
  token_id token = ids[0];
  for (int pos = 0; pos < steps; ++pos) {
    step_plan plan;
    seq_step st;
    st.tokens = {token};
    st.start_position = pos;
    st.block_table = {0, 1, 2, 3};
    st.do_sample = true;
    st.params = test::greedy();
    plan.seqs.push_back(st);
    auto r = be->execute(plan);
    REQUIRE(r.has_value());
    const token_id next = pos + 1 < int(ids.size()) ? ids[std::size_t(pos) + 1] : r->tokens[0].token;
    if (next == 1) break;
    std::string piece = m.tok->token_bytes(token, next);
    if (piece.size() == 1 && !std::isprint(static_cast<unsigned char>(piece[0])) &&
        !std::isspace(static_cast<unsigned char>(piece[0]))) {
      piece.clear();
    }
    out += piece;
    token = next;
  }
  return out + "\n";
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("stories260K as GGUF computes what the checkpoint computes", "[backend][gguf]") {
  const auto bin = test::shared_file("models/stories260K/stories260K.bin");
  const auto tok_path = test::shared_file("models/stories260K/tok512.bin");
  const auto reference = test::shared_file("models/stories260K/reference/once_upon_a_time.n64.txt");
  if (bin.empty() || tok_path.empty() || reference.empty()) return;
  model_settings s;
  s.path = bin.string();
  s.tokenizer = tok_path.string();
  auto from_bin = load_model(s);
  REQUIRE(from_bin.has_value());
  auto tok = llama2c_tokenizer::load(tok_path, 512);
  REQUIRE(tok.has_value());
  const auto path = temp_path("stories260K.gguf");
  REQUIRE(try_write_gguf_model(*from_bin->weights, gguf_vocab_of(**tok), path).has_value());

  model_settings g;
  g.path = path.string();
  auto from_gguf = load_model(g);
  REQUIRE(from_gguf.has_value());
  REQUIRE(from_gguf->format == "gguf");
  const auto prompt = from_bin->tok->encode("Once upon a time, there was a little girl named Lily", true);
  CHECK(from_gguf->tok->encode("Once upon a time, there was a little girl named Lily", true) == prompt);
  const auto a = logits_of(from_bin->weights, prompt), b = logits_of(from_gguf->weights, prompt);
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  CHECK(greedy_text(*from_gguf, "Once upon a time", 64) == read_text(reference));
}

TEST_CASE("a half-RoPE Llama written as GGUF (rows reordered, interleaved RoPE) gives the same logits", "[backend][gguf]") {
  auto c = test::small_config({.dim = 64, .hidden = 96, .vocab = 300});
  c.rope = rope_style::half;
  auto w = make_dummy_weights(c, 11);
  REQUIRE(w.has_value());
  // Larger weights than the initializer's so that attention is far from uniform.
  for (auto& l : w->layers) {
    for (auto* m : {&l.wq, &l.wk}) {
      auto values = try_to_f32(*m).value();
      for (auto& v : values) v *= 40.0f;
      *m = weight_tensor::from_f32(std::move(values), m->rows(), m->cols());
    }
  }
  const auto original = std::make_shared<const model_weights>(std::move(*w));
  const auto path = temp_path("half.gguf");
  REQUIRE(try_write_gguf_model(*original, byte_gguf_vocab(300), path).has_value());
  model_settings s;
  s.path = path.string();
  auto loaded = load_model(s);
  REQUIRE(loaded.has_value());
  REQUIRE(loaded->weights->config.rope == rope_style::interleaved);
  const std::vector<token_id> prompt{1, 40, 77, 120, 5, 250, 33, 33, 91, 17, 64, 200};
  const auto a = logits_of(original, prompt), b = logits_of(loaded->weights, prompt);
  REQUIRE(a.size() == b.size());
  double max_diff = 0, max_abs = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, double(std::abs(a[i] - b[i])));
    max_abs = std::max(max_abs, double(std::abs(a[i])));
  }
  CHECK(max_diff < 1e-4 * std::max(1.0, max_abs));
  // Reading the rows in the wrong pairing would change the logits: the check can fail.
  auto wrong = std::make_shared<model_weights>(*loaded->weights);
  wrong->config.rope = rope_style::half;
  const auto c2 = logits_of(wrong, prompt);
  double wrong_diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) wrong_diff = std::max(wrong_diff, double(std::abs(a[i] - c2[i])));
  CHECK(wrong_diff > 1e-3);
}

TEST_CASE("quantized matrices mapped from a GGUF file give the logits of the same matrices in memory", "[backend][gguf]") {
  const auto c = test::small_config({.dim = 256, .hidden = 512, .vocab = 300});
  auto recipe = try_parse_recipe("q4_k_m");
  REQUIRE(recipe.has_value());
  auto w = make_dummy_weights(c, 5, &*recipe);
  REQUIRE(w.has_value());
  const auto in_memory = std::make_shared<const model_weights>(std::move(*w));
  const auto path = temp_path("q4_k_m.gguf");
  REQUIRE(try_write_gguf_model(*in_memory, byte_gguf_vocab(300), path).has_value());
  model_settings s;
  s.path = path.string();
  auto mapped = load_model(s);
  REQUIRE(mapped.has_value());
  CHECK_THAT(mapped->description, Catch::Contains("q4_k/q6_k"));
  const std::vector<token_id> prompt{1, 72, 105, 33, 200, 7};
  const auto a = logits_of(in_memory, prompt), b = logits_of(mapped->weights, prompt);
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// GGUF models: weights written by try_write_gguf_model and loaded back (stories260K,
// the Llama / Qwen2 / Qwen3 layouts, quantized matrices), the loader's format
// detection, and what the loader refuses.
#include <catch2/catch.hpp>

#include <cstdio>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/gguf_model.hpp"
#include "core/model/formats/gguf_model_writer.hpp"
#include "core/model/formats/llama2c.hpp"
#include "core/model/formats/shapes.hpp"
#include "core/model/gguf/gguf.hpp"
#include "core/model/gguf/gguf_writer.hpp"
#include "core/model/model_loader.hpp"
#include "core/model/rope_factors.hpp"
#include "core/model/tokenizer/llama2c_tokenizer.hpp"
#include "tests/shared_data.hpp"
#include "tests/test_shapes.hpp"
#include "tests/core/model/same_weights.hpp"

using namespace inflight;
namespace fs = std::filesystem;

namespace {

fs::path temp_path(const std::string& name) {
  const auto dir = fs::temp_directory_path() / "inflight_gguf_model_test";
  fs::create_directories(dir);
  return dir / name;
}

model_config small_config(int dim = 64, int hidden = 96) {
  auto c = test::small_config({.dim = dim, .hidden = hidden, .vocab = 300});
  c.rope = rope_style::half;
  c.tied_embeddings = false;
  return c;
}

/// small_config with interleaved RoPE: written as llama without moving rows.
model_config interleaved_config(int dim, int hidden) {
  auto c = small_config(dim, hidden);
  c.rope = rope_style::interleaved;
  return c;
}

model_weights dummy(const model_config& c, const quant_recipe* recipe = nullptr) {
  auto w = make_dummy_weights(c, 7, recipe);
  REQUIRE(w.has_value());
  return std::move(*w);
}

gguf_model write_and_load(const model_weights& w, const std::string& name, gguf_vocab vocab = byte_gguf_vocab(300)) {
  const auto path = temp_path(name);
  REQUIRE(try_write_gguf_model(w, vocab, path, {"test model", 32}).has_value());
  auto loaded = try_load_gguf_model(path);
  if (!loaded) FAIL(loaded.error().message);
  return std::move(*loaded);
}

void check_same_shape(const model_config& a, const model_config& b) {
  CHECK(a.dim == b.dim);
  CHECK(a.hidden_dim == b.hidden_dim);
  CHECK(a.num_layers == b.num_layers);
  CHECK(a.num_heads == b.num_heads);
  CHECK(a.num_kv_heads == b.num_kv_heads);
  CHECK(a.head_dim == b.head_dim);
  CHECK(a.vocab_size == b.vocab_size);
  CHECK(a.max_seq_len == b.max_seq_len);
  CHECK(a.norm_eps == b.norm_eps);
  CHECK(a.rope_theta == b.rope_theta);
  CHECK(a.tied_embeddings == b.tied_embeddings);
  CHECK(a.attention_bias == b.attention_bias);
  CHECK(a.qk_norm == b.qk_norm);
}

}  // namespace

TEST_CASE("stories260K written as GGUF f32 loads back with the same weights and shape", "[core][gguf]") {
  const auto bin = test::shared_file("models/stories260K/stories260K.bin");
  const auto tok_path = test::shared_file("models/stories260K/tok512.bin");
  if (bin.empty() || tok_path.empty()) return;
  auto w = load_llama2c(bin);
  REQUIRE(w.has_value());
  auto tok = llama2c_tokenizer::load(tok_path, w->config.vocab_size);
  REQUIRE(tok.has_value());
  const auto g = write_and_load(*w, "stories260K.gguf", gguf_vocab_of(**tok));
  CHECK(g.architecture == "llama");
  CHECK(g.name == "test model");
  CHECK(g.weights.config.rope == rope_style::interleaved);
  CHECK(g.weights.config.architecture == "LlamaForCausalLM");
  check_same_shape(g.weights.config, w->config);
  test::check_same_weights(g.weights, *w);
  CHECK(g.vocab.end_ids() == std::vector<token_id>{2});
  CHECK(g.tok->bos_id() == 1);
  CHECK(g.tok->encode("Once upon a time", true) == (*tok)->encode("Once upon a time", true));
}

TEST_CASE("a half-RoPE Llama is written with Q/K rows in interleaved order: same pairs, rows moved", "[core][gguf]") {
  const auto w = dummy(small_config());
  const auto g = write_and_load(w, "half.gguf");
  const auto& c = g.weights.config;
  CHECK(c.rope == rope_style::interleaved);
  check_same_shape(c, w.config);
  const int half = c.head_dim / 2;
  for (int h = 0; h < c.num_heads; ++h) {
    for (int i = 0; i < half; ++i) {
      const auto interleaved = std::int64_t(h) * c.head_dim + 2 * i;
      const auto halved = std::int64_t(h) * c.head_dim + i;
      const auto a = g.weights.layers[1].wq.row(interleaved), b = w.layers[1].wq.row(halved);
      REQUIRE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
      const auto a2 = g.weights.layers[1].wq.row(interleaved + 1), b2 = w.layers[1].wq.row(halved + half);
      REQUIRE(std::equal(a2.begin(), a2.end(), b2.begin(), b2.end()));
    }
  }
  // The rows did move: the tensors differ as stored.
  CHECK_FALSE(g.weights.layers[0].wk == w.layers[0].wk);
  CHECK(g.weights.layers[0].wv == w.layers[0].wv);
  CHECK(g.weights.classifier == w.classifier);
}

TEST_CASE("with fewer KV heads than query heads, K's rows are moved within each KV head", "[core][gguf]") {
  // 8 query heads and 2 KV heads of 16: wk has 32 rows, wq 128.
  auto config = small_config(128, 96);
  config.num_heads = 8;
  config.num_kv_heads = 2;
  config.head_dim = 16;
  const auto w = dummy(config);
  const auto g = write_and_load(w, "gqa.gguf");
  const auto& c = g.weights.config;
  REQUIRE(c.num_kv_heads == 2);
  REQUIRE(c.num_heads == 8);
  const int half = c.head_dim / 2;
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const auto& written = g.weights.layers[l].wk;
    const auto& original = w.layers[l].wk;
    REQUIRE(written.rows() == std::int64_t(c.num_kv_heads) * c.head_dim);
    REQUIRE(written.rows() == original.rows());
    for (int h = 0; h < c.num_kv_heads; ++h) {
      for (int i = 0; i < c.head_dim; ++i) {
        // Interleaved row 2p + j of a head is rotate_half row p + j x half.
        const auto to = std::int64_t(h) * c.head_dim + i;
        const auto from = std::int64_t(h) * c.head_dim + i / 2 + (i % 2) * half;
        INFO("layer " << l << " head " << h << " row " << i);
        const auto a = written.row(to), b = original.row(from);
        REQUIRE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
      }
    }
    CHECK(g.weights.layers[l].wv == w.layers[l].wv);
  }
}

TEST_CASE("Qwen3 (q/k norms) and Qwen2 (q/k/v biases) round-trip as qwen3 / qwen2", "[core][gguf]") {
  auto qwen3 = try_as_family(small_config(), "qwen3");
  REQUIRE(qwen3.has_value());
  const auto w3 = dummy(*qwen3);
  const auto g3 = write_and_load(w3, "qwen3.gguf");
  CHECK(g3.architecture == "qwen3");
  CHECK(g3.weights.config.architecture == "Qwen3ForCausalLM");
  CHECK(g3.weights.config.rope == rope_style::half);
  check_same_shape(g3.weights.config, w3.config);
  test::check_same_weights(g3.weights, w3);

  auto c2 = small_config();
  c2.architecture = "Qwen2ForCausalLM";
  c2.attention_bias = true;
  c2.tied_embeddings = true;
  auto w2 = dummy(c2);
  const auto g2 = write_and_load(w2, "qwen2.gguf");
  CHECK(g2.architecture == "qwen2");
  CHECK(g2.weights.config.rope == rope_style::half);
  check_same_shape(g2.weights.config, w2.config);
  test::check_same_weights(g2.weights, w2);
  CHECK_FALSE(g2.weights.layers[0].bq.empty());
}

TEST_CASE("a split GGUF file (llama.cpp's gguf-split parts) loads from its first part as the one file does",
          "[core][gguf]") {
  auto recipe = try_parse_recipe("q8_0");
  REQUIRE(recipe.has_value());
  const auto w = dummy(interleaved_config(64, 96), &*recipe);
  const auto one = write_and_load(w, "whole.gguf");
  const auto whole = gguf_file::try_open(temp_path("whole.gguf"));
  REQUIRE(whole.has_value());
  const std::size_t n = whole->tensors().size();
  const auto part_name = [](const std::string& stem, int k) {
    char tail[40];
    std::snprintf(tail, sizeof tail, "-%05d-of-00003.gguf", k);
    return stem + tail;
  };
  gguf_model_options options{"test model", 32};
  options.split_max_tensors = (n + 2) / 3;  // three parts
  REQUIRE(try_write_gguf_model(w, byte_gguf_vocab(300), temp_path("cut.gguf"), options).has_value());
  std::size_t num_tensors = 0;
  for (int k = 1; k <= 3; ++k) {
    INFO(part_name("cut", k));
    const auto part = gguf_file::try_open(temp_path(part_name("cut", k)));
    REQUIRE(part.has_value());
    CHECK(part->find("split.no")->as_int() == k - 1);
    CHECK(part->find("split.count")->as_int() == 3);
    CHECK(part->find("split.tensors.count")->as_int() == std::int64_t(n));
    num_tensors += part->tensors().size();
    CHECK((part->find("general.architecture") != nullptr) == (k == 1));  // the metadata is the first part's
  }
  CHECK(num_tensors == n);
  auto split = try_load_gguf_model(temp_path(part_name("cut", 1)));
  if (!split) FAIL(split.error().message);
  test::check_same_weights(split->weights, one.weights);
  test::check_same_weights(split->weights, w);
  CHECK(split->name == "test model");
  CHECK(split->tok->encode("Once upon a time", true) == one.tok->encode("Once upon a time", true));
  // Through the model loader too (format auto, the first part's path).
  model_settings settings;
  settings.path = temp_path(part_name("cut", 1)).string();
  auto loaded = load_model(settings);
  if (!loaded) FAIL(loaded.error().message);
  test::check_same_weights(*loaded->weights, w);

  // Another part than the first, a missing part, a part of another split: each named.
  auto second = try_load_gguf_model(temp_path(part_name("cut", 2)));
  REQUIRE_FALSE(second);
  CHECK_THAT(second.error().message, Catch::Contains("is part 2 of 3") && Catch::Contains("-00001-of-00003.gguf"));
  std::filesystem::rename(temp_path(part_name("cut", 3)), temp_path("kept.gguf"));
  auto missing = try_load_gguf_model(temp_path(part_name("cut", 1)));
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("part 3 is missing"));
  options.split_max_tensors = (n + 2) / 3 + 1;  // also three parts, cut elsewhere
  REQUIRE(try_write_gguf_model(w, byte_gguf_vocab(300), temp_path("other.gguf"), options).has_value());
  std::filesystem::copy_file(temp_path(part_name("other", 3)), temp_path(part_name("cut", 3)));
  auto mixed = try_load_gguf_model(temp_path(part_name("cut", 1)));
  REQUIRE_FALSE(mixed);
  CHECK_THAT(mixed.error().message, Catch::Contains("the parts hold") && Catch::Contains("split.tensors.count says"));
}

TEST_CASE("quantized matrices are written and loaded in their own types, as views of the file", "[core][gguf]") {
  auto recipe = try_parse_recipe("q4_k_m");
  REQUIRE(recipe.has_value());
  const auto w = dummy(interleaved_config(256, 512), &*recipe);
  REQUIRE(w.layers[0].wq.dtype() == weight_dtype::q4_k);
  const auto g = write_and_load(w, "q4_k_m.gguf");
  test::check_same_weights(g.weights, w);
  CHECK(weight_dtypes_of(g.weights) == weight_dtypes_of(w));
  // general.file_type: llama.cpp's LLAMA_FTYPE_MOSTLY_* of the layers' type.
  const std::pair<const char*, int> types[] = {{"q8_0", 7}, {"q4_0", 2}, {"q5_k", 17}, {"q6_k", 18}, {"q2_k", 10},
                                               {"q3_k", 11}, {"q4_1", 3}, {"mxfp4", 38}, {"bf16", 32}, {"f16", 1}};
  for (const auto& [type, file_type] : types) {
    auto pure = try_parse_recipe(type);
    REQUIRE(pure.has_value());
    const auto typed = dummy(interleaved_config(256, 512), &*pure);
    const auto back = write_and_load(typed, std::string(type) + ".gguf");
    INFO(type);
    CHECK(back.weights.layers[1].w_down.dtype() == typed.layers[1].w_down.dtype());
    test::check_same_weights(back.weights, typed);
    const auto file = gguf_file::try_open(temp_path(std::string(type) + ".gguf"));
    REQUIRE(file.has_value());
    REQUIRE(file->find("general.file_type") != nullptr);
    CHECK(file->find("general.file_type")->as_int() == file_type);
  }
}

TEST_CASE("model.load_mode read holds the weights in memory of its own: the file can change under it",
          "[core][gguf][model_loader]") {
  auto recipe = try_parse_recipe("q4_k_m");
  REQUIRE(recipe.has_value());
  const auto w = dummy(interleaved_config(256, 512), &*recipe);
  const auto path = temp_path("load-mode.gguf");
  REQUIRE(try_write_gguf_model(w, byte_gguf_vocab(300), path, {"test model", 32}).has_value());
  auto read = try_load_gguf_model(path, file_load::read);
  REQUIRE(read.has_value());
  auto mapped = try_load_gguf_model(path, file_load::map);
  REQUIRE(mapped.has_value());
  test::check_same_weights(read->weights, w);
  test::check_same_weights(mapped->weights, w);
  // Rewrite the file in place with zeros: a private mapping shows the new bytes of
  // pages it has not written, memory of its own keeps the old ones.
  const auto size = fs::file_size(path);
  {
    std::ofstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    const std::vector<char> zeros(size, 0);
    out.write(zeros.data(), std::streamsize(size));
  }
  test::check_same_weights(read->weights, w);
  CHECK(std::memcmp(mapped->weights.layers[0].w_gate.bytes().data(), w.layers[0].w_gate.bytes().data(),
                    w.layers[0].w_gate.bytes().size()) != 0);
  model_settings s;
  s.path = path.string();
  s.load_mode = "read";
  REQUIRE(try_write_gguf_model(w, byte_gguf_vocab(300), path, {"test model", 32}).has_value());
  auto m = load_model(s);
  REQUIRE(m.has_value());
  CHECK_THAT(m->description, Catch::Contains("read into memory"));
  s.load_mode = "mmap";
  m = load_model(s);
  REQUIRE(m.has_value());
  CHECK_THAT(m->description, Catch::Contains("mapped"));
}

TEST_CASE("format auto loads a .gguf file with its tokenizer, stop ids and chat template", "[core][gguf][model_loader]") {
  auto vocab = byte_gguf_vocab(300);
  vocab.chat_template = "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}";
  vocab.eot_id = 5;
  auto c = small_config();
  c.tied_embeddings = true;
  const auto path = temp_path("chat-model.gguf");
  REQUIRE(try_write_gguf_model(dummy(c), vocab, path).has_value());
  model_settings s;
  s.path = path.string();
  CHECK(resolve_format(s) == "gguf");
  auto m = load_model(s);
  REQUIRE(m.has_value());
  CHECK(m->format == "gguf");
  CHECK(m->name == "chat-model");
  CHECK_THAT(m->description, Catch::Contains("GGUF file") && Catch::Contains("llama, f32"));
  CHECK(m->eos_ids == std::vector<token_id>{2, 5});
  CHECK(m->bos_text == "<s>");
  REQUIRE(m->chat.has_value());
  const std::vector<chat_message> messages{{"user", "hi"}};
  CHECK(m->chat->try_render(messages, false, m->bos_text, m->eos_text).value() == "<s>user: hi\n");
  CHECK(m->tok->encode("hi", true) == std::vector<token_id>{1, 'h' + 3, 'i' + 3});
  // A GGUF file without the extension is recognised by its magic.
  const auto renamed = temp_path("chat-model.bin");
  fs::copy_file(path, renamed, fs::copy_options::overwrite_existing);
  s.path = renamed.string();
  CHECK(resolve_format(s) == "gguf");
}

namespace {

/// A tiny llama model's file with one change made by `edit` before writing.
std::string refusal_of(const std::function<void(gguf_writer&)>& edit, const std::string& name) {
  const auto w = dummy(small_config());
  gguf_writer writer;
  writer.set_string("general.architecture", "llama");
  const std::string a = "llama.";
  for (auto [key, value] : {std::pair{"embedding_length", 64}, {"feed_forward_length", 96}, {"block_count", 2},
                            {"attention.head_count", 4}, {"attention.head_count_kv", 2}, {"context_length", 128}}) {
    writer.set_u32(a + key, std::uint32_t(value));
  }
  write_gguf_vocab(writer, byte_gguf_vocab(300));
  REQUIRE(writer.try_add_matrix("token_embd.weight", w.token_embedding).has_value());
  REQUIRE(writer.try_add_vector("output_norm.weight", w.final_norm).has_value());
  for (int i = 0; i < 2; ++i) {
    const auto& l = w.layers[std::size_t(i)];
    const std::string p = "blk." + std::to_string(i) + ".";
    REQUIRE(writer.try_add_vector(p + "attn_norm.weight", l.attn_norm).has_value());
    REQUIRE(writer.try_add_vector(p + "ffn_norm.weight", l.ffn_norm).has_value());
    for (auto [n, m] : {std::pair{"attn_q", &l.wq}, {"attn_k", &l.wk}, {"attn_v", &l.wv}, {"attn_output", &l.wo},
                        {"ffn_gate", &l.w_gate}, {"ffn_up", &l.w_up}, {"ffn_down", &l.w_down}}) {
      REQUIRE(writer.try_add_matrix(p + n + ".weight", *m).has_value());
    }
  }
  edit(writer);
  const auto path = temp_path(name);
  REQUIRE(writer.try_write(path).has_value());
  auto loaded = try_load_gguf_model(path);
  if (loaded) return "(loaded)";
  return loaded.error().message;
}

}  // namespace

TEST_CASE("what the GGUF loader does not compute is refused, named", "[core][gguf]") {
  CHECK(refusal_of([](gguf_writer&) {}, "plain.gguf") == "(loaded)");
  CHECK(refusal_of([](gguf_writer& w) { w.set_u32("llama.attention.sliding_window", 64); }, "window.gguf") == "(loaded)");
  // A window on every layer (Mistral's); the context stays the file's.
  const auto windowed = try_load_gguf_model(temp_path("window.gguf"))->weights.config;
  CHECK(windowed.max_seq_len == 128);
  CHECK(windowed.sliding_window == 64);
  CHECK(windowed.layer_windowed(0));
  // The first part of a split file whose other parts are not there: named.
  CHECK_THAT(refusal_of([](gguf_writer& w) { w.set_u32("split.count", 3); }, "split-00001-of-00003.gguf"),
             Catch::Contains("part 2 is missing") && Catch::Contains("split-00002-of-00003.gguf"));
  CHECK_THAT(refusal_of([](gguf_writer& w) { w.set_u32("split.count", 3); }, "split-a.gguf"),
             Catch::Contains("does not end in -00001-of-00003.gguf"));
  CHECK(refusal_of([](gguf_writer& w) { w.set_u32("split.count", 1); }, "split1.gguf") == "(loaded)");
  CHECK_THAT(refusal_of([](gguf_writer& w) { w.set_string("general.architecture", "deepseek2"); }, "arch.gguf"),
             Catch::Contains("architecture 'deepseek2' is not supported"));
  CHECK_THAT(refusal_of([](gguf_writer& w) { REQUIRE(w.try_add_vector("blk.0.ffn_gate_exps.weight", std::vector<float>(4)).has_value()); },
                        "extra.gguf"),
             Catch::Contains("tensor 'blk.0.ffn_gate_exps.weight' is not used"));
  // A llama file with experts is Mixtral: it then needs the experts' counts and tensors.
  CHECK_THAT(refusal_of([](gguf_writer& w) { w.set_u32("llama.expert_count", 8); }, "moe.gguf"),
             Catch::Contains("llama.expert_used_count is missing"));
  CHECK_THAT(refusal_of([](gguf_writer& w) { w.set_u32("llama.expert_count", 8), w.set_u32("llama.expert_used_count", 2); },
                        "moe2.gguf"),
             Catch::Contains("lacks tensor 'blk.0.ffn_gate_inp.weight'"));
  CHECK_THAT(refusal_of([](gguf_writer& w) { w.set_u32("llama.rope.dimension_count", 7); }, "odd.gguf"),
             Catch::Contains("rope.dimension_count 7 must be even"));
  CHECK_THAT(refusal_of([](gguf_writer& w) { w.set_string("llama.rope.scaling.type", "longrope"), w.set_f32("llama.rope.scaling.factor", 4.0f); },
                        "longrope.gguf"),
             Catch::Contains("rope.scaling.type 'longrope' is not supported"));
  CHECK_THAT(refusal_of([](gguf_writer& w) { w.set_string("llama.rope.scaling.type", "yarn"), w.set_f32("llama.rope.scaling.factor", 4.0f),
                                             w.set_f32("llama.rope.scaling.yarn_log_multiplier", 0.1f); },
                        "yarnlog.gguf"),
             Catch::Contains("yarn_log_multiplier"));
  CHECK_THAT(refusal_of([](gguf_writer& w) { w.set_u32("llama.embedding_length", 32); }, "shape.gguf"),
             Catch::Contains("tensor 'token_embd.weight' has ne [64, 300], expected [32, 300]"));
  // A q bias makes a llama model one with q/k/v biases: the k bias is then missing.
  CHECK_THAT(refusal_of([](gguf_writer& w) { REQUIRE(w.try_add_vector("blk.0.attn_q.bias", std::vector<float>(64)).has_value()); },
                        "missing.gguf"),
             Catch::Contains("lacks tensor 'blk.0.attn_k.bias'"));
  CHECK_THAT(refusal_of([](gguf_writer& w) { w.set_u32("llama.attention.head_count", 1 << 27), w.set_u32("llama.attention.key_length", 16); },
                        "wide.gguf"),
             Catch::Contains("134217728 heads of 16 values is too wide"));
  // More layers than the file has tensors for: refused before anything is sized by it.
  CHECK_THAT(refusal_of([](gguf_writer& w) { w.set_u32("llama.block_count", 1 << 20); }, "layers.gguf"),
             Catch::Contains("block_count 1048576 but the file holds 20 tensors"));
  CHECK_THAT(refusal_of([](gguf_writer& w) { w.set_string("tokenizer.ggml.model", "bert"); }, "bert.gguf"),
             Catch::Contains("tokenizer model 'bert'"));
  CHECK_THAT(refusal_of([](gguf_writer& w) { w.set_u32("tokenizer.ggml.tokens", 3); }, "tokens.gguf"),
             Catch::Contains("tokenizer.ggml.tokens must be an array of string"));
  CHECK_THAT(refusal_of([](gguf_writer& w) { w.set_string("llama.context_length", "long"); }, "ctx.gguf"),
             Catch::Contains("llama.context_length must be a positive integer"));
}

TEST_CASE("the writer refuses a config no GGUF architecture describes", "[core][gguf]") {
  auto c = small_config();
  c.attention_bias = true;
  c.qk_norm = true;
  CHECK_FALSE(try_gguf_architecture_of(c).has_value());
  c.qk_norm = false;
  CHECK(try_gguf_architecture_of(c).value() == "qwen2");
  c.scaling.type = rope_scaling_type::llama3;
  CHECK_FALSE(try_gguf_architecture_of(c).has_value());
  c.scaling.type = rope_scaling_type::none;
  c.moe = {4, 2, 16};
  CHECK_THAT(try_gguf_architecture_of(c).error().message, Catch::Contains("experts are written for a mixture family"));
  const auto w = dummy(small_config());
  CHECK_FALSE(try_write_gguf_model(w, byte_gguf_vocab(400), temp_path("vocab.gguf")).has_value());
}

TEST_CASE("Llama-3 scaling is written as rope_freqs.weight and read back as the same factors", "[core][gguf][rope]") {
  auto c = interleaved_config(64, 96);
  c.rope_theta = 500000.0f;
  c.scaling = {rope_scaling_type::llama3, 8.0f, 1.0f, 4.0f, 64};
  const auto g = write_and_load(dummy(c), "llama3-scaling.gguf");
  const auto& s = g.weights.config.scaling;
  CHECK(s.type == rope_scaling_type::llama3);
  CHECK(s.factor == 8.0f);
  CHECK(s.original_max_position == 64);
  // Few pairs lie in the band here, so only the factors (not low/high_freq_factor) are determined.
  const auto want = llama3_rope_factors(c), got = llama3_rope_factors(g.weights.config);
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-5));
  CHECK(std::count(want.begin(), want.end(), 1.0f) < int(want.size()));
}

TEST_CASE("pooling_type written into a GGUF file comes back through the loaders as the stated pooling",
          "[core][gguf][embeddings]") {
  auto c = small_config();
  c.tied_embeddings = true;
  const auto weights = dummy(c);
  const std::pair<std::uint32_t, std::optional<pooling_kind>> cases[] = {
      {1, pooling_kind::mean}, {2, pooling_kind::first}, {3, pooling_kind::last}, {4, std::nullopt}};
  for (const auto& [type, kind] : cases) {
    INFO("pooling_type " << type);
    const auto path = temp_path("pooling-" + std::to_string(type) + ".gguf");
    gguf_model_options options;
    options.pooling_type = type;
    REQUIRE(try_write_gguf_model(weights, byte_gguf_vocab(300), path, options).has_value());
    auto g = try_load_gguf_model(path);
    REQUIRE(g.has_value());
    CHECK(g->pooling.kind == kind);
    CHECK(g->pooling.is_stated());
    CHECK(g->pooling.source == "llama.pooling_type");
    model_settings s;
    s.path = path.string();
    auto m = load_model(s);  // format auto
    REQUIRE(m.has_value());
    CHECK(m->pooling.kind == kind);
    CHECK(m->pooling.stated == g->pooling.stated);
    fs::remove(path);
  }
  // A file without the key (a generative model) states nothing.
  const auto plain = temp_path("pooling-none-stated.gguf");
  REQUIRE(try_write_gguf_model(weights, byte_gguf_vocab(300), plain).has_value());
  auto g = try_load_gguf_model(plain);
  REQUIRE(g.has_value());
  CHECK_FALSE(g->pooling.is_stated());
  CHECK_FALSE(g->pooling.kind.has_value());
  fs::remove(plain);
}

// Qwen3 models: config.json, the q/k norm tensors, dummy weights and named shapes.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/hf_model.hpp"
#include "core/model/formats/hf_writer.hpp"
#include "core/model/formats/shapes.hpp"

using namespace inflight;

namespace {

struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("inflight_qwen3_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
  }
  ~temp_dir() { std::filesystem::remove_all(path); }
};

// The config.json of Qwen3-Reranker-0.6B.
const char* reranker_config = R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
  "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
  "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true,
  "torch_dtype": "float32", "use_cache": true, "use_sliding_window": false, "vocab_size": 151669})";

model_config tiny_qwen3() {
  auto c = try_as_family(*named_shape("qwen3-0.6b"), "qwen3");
  REQUIRE(c.has_value());
  c->dim = 32;
  c->hidden_dim = 40;
  c->num_layers = 2;
  c->num_heads = 4;
  c->num_kv_heads = 2;
  c->head_dim = 16;  // q_dim 64 != dim 32, as in the real model (2048 vs 1024)
  c->vocab_size = 64;
  c->max_seq_len = 256;
  return *c;
}

}  // namespace

TEST_CASE("Qwen3-Reranker's config.json parses with q/k norms and an explicit head_dim", "[core][qwen3]") {
  auto c = try_parse_hf_config(reranker_config, "config.json");
  REQUIRE(c.has_value());
  CHECK(c->architecture == "Qwen3ForCausalLM");
  CHECK(c->qk_norm);
  CHECK_FALSE(c->attention_bias);
  CHECK(c->head_dim == 128);
  CHECK(c->q_dim() == 2048);  // wider than hidden_size: head_dim is not hidden / heads
  CHECK(c->norm_eps == 1e-6f);
  CHECK(c->rope_theta == 1000000.0f);
  CHECK(c->tied_embeddings);
  // The named shape is this model.
  const auto shape = named_shape("qwen3-0.6b");
  REQUIRE(shape.has_value());
  CHECK(shape->num_parameters() == c->num_parameters());
  CHECK(shape->qk_norm);

  auto llama = try_parse_hf_config(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64,
      "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100})", "c");
  REQUIRE(llama.has_value());
  CHECK_FALSE(llama->qk_norm);
}

TEST_CASE("a Qwen3 folder round-trips its q/k norm tensors", "[core][qwen3]") {
  const auto c = tiny_qwen3();
  auto w = make_dummy_weights(c, 11);
  REQUIRE(w.has_value());
  REQUIRE(w->layers[0].q_norm.size() == 16);
  CHECK(w->layers[0].q_norm == std::vector<float>(16, 1.0f));
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(1.0f, 0.5f);
  for (auto& l : w->layers) {
    for (auto* v : {&l.q_norm, &l.k_norm}) for (auto& x : *v) x = normal(rng);
  }
  temp_dir dir;
  REQUIRE(write_hf_model_folder(*w, dir.path).has_value());
  std::ifstream in(dir.path / "config.json");
  const auto config_json = nlohmann::json::parse(in);
  CHECK(config_json["model_type"] == "qwen3");
  CHECK(config_json["architectures"][0] == "Qwen3ForCausalLM");
  CHECK(config_json["head_dim"] == 16);
  auto loaded = try_load_hf_model(dir.path);
  INFO((loaded ? "" : loaded.error().message));
  REQUIRE(loaded.has_value());
  CHECK(loaded->weights.config.qk_norm);
  CHECK(loaded->weights.config.num_parameters() == c.num_parameters());
  for (std::size_t i = 0; i < w->layers.size(); ++i) {
    CHECK(loaded->weights.layers[i].q_norm == w->layers[i].q_norm);
    CHECK(loaded->weights.layers[i].k_norm == w->layers[i].k_norm);
    CHECK(loaded->weights.layers[i].wq == w->layers[i].wq);
  }
}

TEST_CASE("a Qwen3 folder without its k_norm tensor names it", "[core][qwen3]") {
  auto w = make_dummy_weights(tiny_qwen3(), 1);
  REQUIRE(w.has_value());
  temp_dir dir;
  REQUIRE(write_hf_model_folder(*w, dir.path).has_value());
  // The same folder read as Llama: no norms listed. Then Qwen3 with a Llama folder: missing tensor.
  auto llama = *w;
  llama.config.architecture = "LlamaForCausalLM";
  llama.config.qk_norm = false;
  for (auto& l : llama.layers) l.q_norm.clear(), l.k_norm.clear();
  temp_dir llama_dir;
  REQUIRE(write_hf_model_folder(llama, llama_dir.path).has_value());
  std::filesystem::copy_file(dir.path / "config.json", llama_dir.path / "config.json",
                             std::filesystem::copy_options::overwrite_existing);
  auto loaded = try_load_hf_model(llama_dir.path);
  REQUIRE_FALSE(loaded.has_value());
  CHECK(loaded.error().code == errc::not_found);
  CHECK_THAT(loaded.error().message, Catch::Contains("model.layers.0.self_attn.q_norm.weight") &&
                                         Catch::Contains("[16]"));
}

TEST_CASE("shapes drawn as qwen3, and writing refuses norms a format cannot name", "[core][qwen3]") {
  auto bench = named_shape("bench-20M");
  REQUIRE(bench.has_value());
  auto q = try_as_family(*bench, "qwen3");
  REQUIRE(q.has_value());
  CHECK(q->qk_norm);
  CHECK(q->architecture == "Qwen3ForCausalLM");
  CHECK(q->rope == rope_style::half);
  CHECK(q->num_parameters() == bench->num_parameters() + 6 * 2 * 48);
  CHECK(try_as_family(*bench, "llama")->num_parameters() == bench->num_parameters());
  auto bad = try_as_family(*bench, "gpt2");
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.error().message, Catch::Contains("gpt2"));

  auto w = make_dummy_weights(tiny_qwen3(), 2);
  REQUIRE(w.has_value());
  w->config.architecture = "LlamaForCausalLM";  // Llama has no q/k norms to write
  temp_dir dir;
  auto written = write_hf_model_folder(*w, dir.path);
  REQUIRE_FALSE(written.has_value());
  CHECK_THAT(written.error().message, Catch::Contains("Qwen3"));
}

// Model families as data: the table's lookups, config.json and GGUF metadata of mixtures
// of experts and of the RoPE variants, and every family's weights through both writers
// and back.
#include <catch2/catch.hpp>

#include <filesystem>

#include "core/model/convert.hpp"
#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/gguf_model.hpp"
#include "core/model/formats/gguf_model_writer.hpp"
#include "core/model/formats/hf_model.hpp"
#include "core/model/formats/hf_writer.hpp"
#include "core/model/formats/shapes.hpp"
#include "core/model/model_family.hpp"
#include "tests/test_shapes.hpp"

using namespace inflight;
namespace fs = std::filesystem;

namespace {

fs::path temp_path(const std::string& name) {
  const auto dir = fs::temp_directory_path() / "inflight_model_family_test";
  fs::create_directories(dir);
  return dir / name;
}

model_config drawn_as(std::string_view family) {
  auto c = test::small_config({.dim = 64, .hidden = 96, .vocab = 300});
  c.rope = rope_style::half;
  c.tied_embeddings = false;
  auto drawn = try_as_family(c, family);
  if (!drawn) FAIL(drawn.error().message);
  return *drawn;
}

void check_same_weights(const model_weights& a, const model_weights& b) {
  CHECK(a.token_embedding == b.token_embedding);
  CHECK(a.classifier == b.classifier);
  CHECK(a.final_norm == b.final_norm);
  REQUIRE(a.layers.size() == b.layers.size());
  for (std::size_t i = 0; i < a.layers.size(); ++i) {
    const auto &x = a.layers[i], &y = b.layers[i];
    for (std::size_t m = 0; m < matrices_of(x).size(); ++m) {
      INFO("layer " << i << " matrix " << m);
      CHECK(*matrices_of(x)[m] == *matrices_of(y)[m]);
    }
    CHECK(x.shared_expert_gate == y.shared_expert_gate);
    CHECK(x.q_norm == y.q_norm);
    CHECK(x.bq == y.bq);
  }
}

void check_same_moe(const moe_config& a, const moe_config& b) {
  CHECK(a.num_experts == b.num_experts);
  CHECK(a.experts_per_token == b.experts_per_token);
  CHECK(a.expert_hidden_dim == b.expert_hidden_dim);
  CHECK(a.normalize_weights == b.normalize_weights);
  CHECK(a.shared_hidden_dim == b.shared_hidden_dim);
  CHECK(a.gating == b.gating);
}

}  // namespace

TEST_CASE("families are found by their GGUF and Hugging Face names", "[core][family]") {
  CHECK(find_gguf_family("llama", false)->name == "llama");
  CHECK(find_gguf_family("llama", true)->name == "mixtral");
  CHECK(find_gguf_family("qwen3moe", true)->hf_architecture == "Qwen3MoeForCausalLM");
  CHECK(find_gguf_family("gemma2", false) == nullptr);
  CHECK(find_hf_family("MistralForCausalLM")->name == "llama");
  CHECK(find_hf_family("Qwen2MoeForCausalLM")->shared_expert);
  CHECK(find_hf_family("GPT2LMHeadModel") == nullptr);
  CHECK(family_list(&model_family::gguf_architecture) == "llama, qwen2, qwen3, qwen2moe, qwen3moe");
  model_config c;
  c.architecture = "llama2.c";
  CHECK(family_of(c).name == "llama");
  c.moe = {};
  CHECK_FALSE(try_apply_family(c, *find_family("qwen3moe")).has_value());  // experts need their counts
}

TEST_CASE("shapes drawn as a mixture get experts, and qwen3-30b-a3b counts its active parameters", "[core][family]") {
  const auto c = drawn_as("qwen3moe");
  CHECK(c.architecture == "Qwen3MoeForCausalLM");
  CHECK(c.qk_norm);
  CHECK(c.moe.num_experts == 8);
  CHECK(c.moe.experts_per_token == 2);
  CHECK(c.moe.expert_hidden_dim == 32);  // a quarter of 96, rounded up to 32
  CHECK(c.moe.normalize_weights);
  CHECK(c.dense_hidden_dim() == 0);
  const auto q2 = drawn_as("qwen2moe");
  CHECK(q2.attention_bias);
  CHECK(q2.moe.shared_hidden_dim == 96);
  CHECK_FALSE(q2.moe.normalize_weights);
  const auto big = named_shape("qwen3-30b-a3b");
  REQUIRE(big);
  // 30.5B in all, 3.3B read per token: the published figures of Qwen3-30B-A3B.
  CHECK(double(big->num_parameters()) == Approx(30.5e9).epsilon(0.01));
  CHECK(double(big->num_active_parameters()) == Approx(3.3e9).epsilon(0.02));
}

TEST_CASE("config.json of the mixture families parses into experts", "[core][family][hf_model]") {
  const std::string base = R"("hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300, "hidden_act": "silu")";
  auto q3 = try_parse_hf_config(R"({"architectures": ["Qwen3MoeForCausalLM"], "num_experts": 16,
      "num_experts_per_tok": 4, "moe_intermediate_size": 48, "norm_topk_prob": true, "decoder_sparse_step": 1,
      "mlp_only_layers": [], )" + base + "}", "q3.json");
  REQUIRE(q3);
  CHECK(q3->qk_norm);
  check_same_moe(q3->moe, {16, 4, 48, moe_gating::softmax, true, 0});
  auto q2 = try_parse_hf_config(R"({"architectures": ["Qwen2MoeForCausalLM"], "num_experts": 8,
      "num_experts_per_tok": 2, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 80, )" + base + "}",
                                "q2.json");
  REQUIRE(q2);
  CHECK(q2->attention_bias);
  check_same_moe(q2->moe, {8, 2, 32, moe_gating::softmax, false, 80});
  auto mixtral = try_parse_hf_config(R"({"architectures": ["MixtralForCausalLM"], "num_local_experts": 8,
      "num_experts_per_tok": 2, "sliding_window": null, )" + base + "}", "m.json");
  REQUIRE(mixtral);
  check_same_moe(mixtral->moe, {8, 2, 96, moe_gating::softmax, true, 0});
  CHECK(mixtral->dense_hidden_dim() == 0);
}

TEST_CASE("config.json's linear and YaRN scaling and partial rotary factor", "[core][family][hf_model][rope]") {
  const std::string base = R"("architectures": ["Qwen3ForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
      "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 32, "vocab_size": 300,
      "max_position_embeddings": 131072)";
  auto yarn = try_parse_hf_config(R"({"rope_scaling": {"rope_type": "yarn", "factor": 4.0,
      "original_max_position_embeddings": 32768}, )" + base + "}", "y.json");
  REQUIRE(yarn);
  CHECK(yarn->scaling.type == rope_scaling_type::yarn);
  CHECK(yarn->scaling.factor == 4.0f);
  CHECK(yarn->scaling.original_max_position == 32768);
  CHECK(yarn->scaling.beta_fast == 32.0f);
  CHECK(yarn->scaling.attention_factor == 0.0f);  // the default, 0.1 ln 4 + 1
  auto mscale = try_parse_hf_config(R"({"rope_scaling": {"type": "yarn", "factor": 40, "mscale": 0.707,
      "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096}, )" + base + "}", "m.json");
  REQUIRE(mscale);
  CHECK(mscale->scaling.attention_factor == Approx(1.0f));
  auto linear = try_parse_hf_config(R"({"rope_scaling": {"type": "linear", "factor": 2}, )" + base + "}", "l.json");
  REQUIRE(linear);
  CHECK(linear->scaling.type == rope_scaling_type::linear);
  auto partial = try_parse_hf_config(R"({"partial_rotary_factor": 0.75, )" + base + "}", "p.json");
  REQUIRE(partial);
  CHECK(partial->rope_dims == 24);
  CHECK(partial->rotary_dims() == 24);
}

TEST_CASE("every family's weights go through GGUF and a Hugging Face folder and come back", "[core][family][gguf][hf_model]") {
  for (const auto& family : model_families()) {
    auto c = drawn_as(family.name);
    if (family.name == "qwen3moe") {  // and the RoPE variants on one of them
      c.rope_dims = 8;
      c.scaling.type = rope_scaling_type::yarn;
      c.scaling.factor = 4.0f;
      c.scaling.original_max_position = 64;
    }
    if (family.name == "qwen2") {
      c.scaling.type = rope_scaling_type::linear;
      c.scaling.factor = 2.0f;
    }
    INFO(family.name);
    auto w = make_dummy_weights(c, 11);
    REQUIRE(w.has_value());
    const auto gguf = temp_path(std::string(family.name) + ".gguf");
    REQUIRE(try_write_gguf_model(*w, byte_gguf_vocab(300), gguf, {"family", 32}).has_value());
    auto from_gguf = try_load_gguf_model(gguf);
    if (!from_gguf) FAIL(from_gguf.error().message);
    const auto& g = from_gguf->weights;
    CHECK(g.config.architecture == c.architecture);
    CHECK(g.config.rope_dims == c.rope_dims);
    CHECK(g.config.scaling.type == c.scaling.type);
    CHECK(g.config.scaling.factor == c.scaling.factor);
    check_same_moe(g.config.moe, c.moe);
    if (family.gguf_rope == rope_style::half) {
      check_same_weights(g, *w);
    } else {  // Q/K rows move into llama's order (gguf_model_test); the rest stays
      for (std::size_t i = 0; i < g.layers.size(); ++i) {
        CHECK(g.layers[i].router == w->layers[i].router);
        CHECK(g.layers[i].gate_exps == w->layers[i].gate_exps);
        CHECK(g.layers[i].up_exps == w->layers[i].up_exps);
        CHECK(g.layers[i].down_exps == w->layers[i].down_exps);
        CHECK(g.layers[i].wv == w->layers[i].wv);
      }
    }
    const auto folder = temp_path(std::string(family.name) + "_hf");
    REQUIRE(write_hf_model_folder(*w, folder, tensor_dtype::f32, {}).has_value());
    auto from_hf = try_load_hf_model(folder);
    if (!from_hf) FAIL(from_hf.error().message);
    CHECK(from_hf->weights.config.architecture == c.architecture);
    CHECK(from_hf->weights.config.rope_dims == c.rope_dims);
    CHECK(from_hf->weights.config.scaling.type == c.scaling.type);
    check_same_moe(from_hf->weights.config.moe, c.moe);
    check_same_weights(from_hf->weights, *w);
  }
}

TEST_CASE("a quantized mixture keeps its router in f32 and its experts in the recipe's types", "[core][family][gguf]") {
  const auto c = drawn_as("qwen3moe");
  const auto recipe = try_parse_recipe("q8_0");
  REQUIRE(recipe);
  auto w = make_dummy_weights(c, 3, &*recipe);
  REQUIRE(w.has_value());
  CHECK(w->layers[0].router.dtype() == weight_dtype::f32);
  CHECK(w->layers[0].gate_exps.dtype() == weight_dtype::q8_0);
  CHECK(w->layers[0].down_exps.dtype() == weight_dtype::q8_0);
  const auto path = temp_path("q8.gguf");
  REQUIRE(try_write_gguf_model(*w, byte_gguf_vocab(300), path, {"q8", 32}).has_value());
  auto loaded = try_load_gguf_model(path);
  if (!loaded) FAIL(loaded.error().message);
  check_same_weights(loaded->weights, *w);
}

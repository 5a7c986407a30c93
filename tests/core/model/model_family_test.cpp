// Model families as data: the table's lookups, config.json and GGUF metadata of mixtures
// of experts and of the RoPE variants, and every family's weights through both writers
// and back.
#include <catch2/catch.hpp>

#include <deque>
#include <filesystem>
#include <fstream>

#include "core/model/convert.hpp"
#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/gguf_model.hpp"
#include "core/model/formats/gguf_model_writer.hpp"
#include "core/model/formats/hf_model.hpp"
#include "core/model/formats/hf_writer.hpp"
#include "core/model/formats/layer_layout.hpp"
#include "core/model/formats/safetensors.hpp"
#include "core/model/formats/shapes.hpp"
#include "core/model/model_family.hpp"
#include "tests/core/model/same_weights.hpp"
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

/// Gemma's layer description (and the window) read back as written.
void check_same_layers(const model_config& a, const model_config& b) {
  CHECK(a.activation == b.activation);
  CHECK(a.post_norms == b.post_norms);
  CHECK(a.embedding_scale == b.embedding_scale);
  CHECK(a.attention_scale == b.attention_scale);
  CHECK(a.attn_softcap == b.attn_softcap);
  CHECK(a.final_softcap == b.final_softcap);
  CHECK(a.sliding_window == b.sliding_window);
  CHECK(a.window_period == b.window_period);
  CHECK(a.rope_local_theta == b.rope_local_theta);
  CHECK(a.tied_embeddings == b.tied_embeddings);
}

/// Norms of distinct values (not 1: Gemma's files hold w - 1 in Hugging Face folders).
void vary_norms(model_weights& w) {
  float next = 0.5f;
  const auto fill = [&](std::vector<float>& v) {
    for (auto& x : v) x = (next += 0.01f);
  };
  for (auto& l : w.layers) {
    for (auto* v : {&l.attn_norm, &l.ffn_norm, &l.post_attn_norm, &l.post_ffn_norm, &l.q_norm, &l.k_norm}) fill(*v);
  }
  fill(w.final_norm);
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
  CHECK(find_gguf_family("gemma2", false)->post_norms);
  CHECK(find_gguf_family("gpt-oss", true)->sinks_and_biases);
  CHECK(find_gguf_family("deepseek2", true) == nullptr);
  CHECK(find_hf_family("Phi3ForCausalLM")->fused_projections);
  CHECK(find_hf_family("MistralForCausalLM")->name == "llama");
  CHECK(find_hf_family("Qwen2MoeForCausalLM")->shared_expert);
  CHECK(find_hf_family("GPT2LMHeadModel") == nullptr);
  CHECK(family_list(&model_family::gguf_architecture) == "llama, qwen2, qwen3, qwen2moe, qwen3moe, gemma, gemma2, gemma3, phi3, gpt-oss");
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
    if (family.name == "gemma3") {  // a window, a period and a local base other than the defaults
      c.sliding_window = 24;
      c.window_period = 3;
      c.rope_local_theta = 500.0f;
    }
    if (family.name == "gemma2") c.sliding_window = 32;
    if (family.name == "phi3") {  // LongRoPE over 8 of 16 pairs
      c.rope_dims = c.head_dim / 2;
      c.scaling.type = rope_scaling_type::longrope;
      c.scaling.original_max_position = 64;
      c.scaling.factor = float(c.max_seq_len) / 64.0f;
      for (int i = 0; i < c.rotary_dims() / 2; ++i) {
        c.scaling.short_factor.push_back(1.0f + 0.25f * float(i));
        c.scaling.long_factor.push_back(2.0f + float(i));
      }
    }
    INFO(family.name);
    auto w = make_dummy_weights(c, 11);
    REQUIRE(w.has_value());
    vary_norms(*w);
    const auto gguf = temp_path(std::string(family.name) + ".gguf");
    REQUIRE(try_write_gguf_model(*w, byte_gguf_vocab(300), gguf, {"family", 32}).has_value());
    auto from_gguf = try_load_gguf_model(gguf);
    if (!from_gguf) FAIL(from_gguf.error().message);
    const auto& g = from_gguf->weights;
    CHECK(g.config.architecture == c.architecture);
    CHECK(g.config.rope_dims == c.rope_dims);
    CHECK(g.config.scaling.type == c.scaling.type);
    CHECK(g.config.scaling.factor == c.scaling.factor);
    CHECK(g.config.scaling.short_factor == c.scaling.short_factor);
    CHECK(g.config.scaling.long_factor == c.scaling.long_factor);
    check_same_moe(g.config.moe, c.moe);
    check_same_layers(g.config, c);
    if (family.gguf_rope == rope_style::half) {
      test::check_same_weights(g, *w);
    } else {  // Q/K rows move into llama's order (gguf_model_test); the rest stays
      for (std::size_t i = 0; i < g.layers.size(); ++i) {
        CHECK(g.layers[i].router == w->layers[i].router);
        CHECK(g.layers[i].gate_exps == w->layers[i].gate_exps);
        CHECK(g.layers[i].up_exps == w->layers[i].up_exps);
        CHECK(g.layers[i].down_exps == w->layers[i].down_exps);
        CHECK(g.layers[i].wv == w->layers[i].wv);
      }
    }
    if (!family.hf_loadable) {  // gpt-oss: GGUF only
      for (std::size_t i = 0; i < g.layers.size(); ++i) {
        CHECK(g.layers[i].attn_sinks == w->layers[i].attn_sinks);
        CHECK(g.layers[i].bo == w->layers[i].bo);
        CHECK(g.layers[i].router_bias == w->layers[i].router_bias);
        CHECK(g.layers[i].gate_exps_bias == w->layers[i].gate_exps_bias);
        CHECK(g.layers[i].up_exps_bias == w->layers[i].up_exps_bias);
        CHECK(g.layers[i].down_exps_bias == w->layers[i].down_exps_bias);
        CHECK_FALSE(g.layers[i].attn_sinks.empty());
      }
      CHECK_FALSE(write_hf_model_folder(*w, temp_path("gpt-oss_hf"), tensor_dtype::f32, {}).has_value());
      continue;
    }
    const auto folder = temp_path(std::string(family.name) + "_hf");
    REQUIRE(write_hf_model_folder(*w, folder, tensor_dtype::f32, {}).has_value());
    auto from_hf = try_load_hf_model(folder);
    if (!from_hf) FAIL(from_hf.error().message);
    CHECK(from_hf->weights.config.architecture == c.architecture);
    CHECK(from_hf->weights.config.rope_dims == c.rope_dims);
    CHECK(from_hf->weights.config.scaling.type == c.scaling.type);
    CHECK(from_hf->weights.config.scaling.long_factor == c.scaling.long_factor);
    CHECK(from_hf->weights.config.scaling.original_max_position == c.scaling.original_max_position);
    check_same_moe(from_hf->weights.config.moe, c.moe);
    check_same_layers(from_hf->weights.config, c);
    // Gemma's norms go through w - 1 and back: equal to float rounding.
    if (family.norm_offset) {
      const auto& l = from_hf->weights.layers[0];
      REQUIRE(l.post_attn_norm.size() == w->layers[0].post_attn_norm.size());
      for (std::size_t i = 0; i < l.attn_norm.size(); ++i) CHECK(l.attn_norm[i] == Approx(w->layers[0].attn_norm[i]));
      continue;
    }
    test::check_same_weights(from_hf->weights, *w);
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
  test::check_same_weights(loaded->weights, *w);
}

TEST_CASE("config.json of Gemma 2, Gemma 3 and Phi-3 as published", "[core][family][hf_model]") {
  // The fields of google/gemma-2-2b, google/gemma-3-1b-it and microsoft/Phi-3-mini-4k
  // that shape the layers (sizes shrunk).
  auto gemma2 = try_parse_hf_config(R"({"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2",
      "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 4, "num_attention_heads": 4,
      "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 300, "hidden_activation": "gelu_pytorch_tanh",
      "hidden_act": "gelu_pytorch_tanh", "query_pre_attn_scalar": 144, "attn_logit_softcapping": 50.0,
      "final_logit_softcapping": 30.0, "sliding_window": 4096, "max_position_embeddings": 8192,
      "rope_theta": 10000.0, "rms_norm_eps": 1e-06})", "g2.json");
  if (!gemma2) FAIL(gemma2.error().message);
  CHECK(gemma2->activation == mlp_activation::gelu_tanh);
  CHECK(gemma2->tied_embeddings);  // Gemma's default
  CHECK(gemma2->post_norms);
  CHECK(gemma2->embedding_scale == Approx(8.0f));
  CHECK(gemma2->attention_scale == Approx(1.0f / 12.0f));
  CHECK(gemma2->attn_softcap == 50.0f);
  CHECK(gemma2->final_softcap == 30.0f);
  CHECK(gemma2->sliding_window == 4096);
  CHECK(gemma2->window_period == 2);
  CHECK(gemma2->layer_windowed(0));
  CHECK_FALSE(gemma2->layer_windowed(1));
  CHECK(gemma2->max_seq_len == 8192);  // the window no longer caps the context

  const std::string gemma3_base = R"("architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
      "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 12, "num_attention_heads": 4,
      "num_key_value_heads": 1, "head_dim": 32, "vocab_size": 300, "hidden_activation": "gelu_pytorch_tanh",
      "query_pre_attn_scalar": 32, "attn_logit_softcapping": null, "final_logit_softcapping": null,
      "sliding_window": 512, "rope_local_base_freq": 10000.0, "rope_theta": 1000000.0,
      "rope_scaling": {"rope_type": "linear", "factor": 8.0}, "max_position_embeddings": 32768)";
  auto gemma3 = try_parse_hf_config("{" + gemma3_base + R"(, "sliding_window_pattern": 6})", "g3.json");
  if (!gemma3) FAIL(gemma3.error().message);
  CHECK(gemma3->qk_norm);
  CHECK(gemma3->attention_scale == 0.0f);  // query_pre_attn_scalar == head_dim: the default
  CHECK(gemma3->attn_softcap == 0.0f);
  CHECK(gemma3->final_softcap == 0.0f);
  CHECK(gemma3->sliding_window == 512);
  CHECK(gemma3->window_period == 6);
  CHECK(gemma3->rope_local_theta == 10000.0f);
  CHECK(gemma3->scaling.type == rope_scaling_type::linear);
  int global = 0;
  for (int l = 0; l < 12; ++l) global += gemma3->layer_windowed(l) ? 0 : 1;
  CHECK(global == 2);
  CHECK_FALSE(gemma3->layer_windowed(5));
  // Newer configs list layer_types instead.
  const auto layer_types = [](auto is_full) {
    std::string types;
    for (int l = 0; l < 12; ++l) types += std::string(l ? ", " : "") + (is_full(l) ? "\"full_attention\"" : "\"sliding_attention\"");
    return R"(, "layer_types": [)" + types + "]}";
  };
  auto listed = try_parse_hf_config("{" + gemma3_base + layer_types([](int l) { return l % 4 == 3; }), "g3t.json");
  if (!listed) FAIL(listed.error().message);
  CHECK(listed->window_period == 4);
  // Layer 0 global too: no period describes it.
  auto refused =
      try_parse_hf_config("{" + gemma3_base + layer_types([](int l) { return l == 0 || l % 4 == 3; }), "g3x.json");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == errc::unsupported);

  auto phi3 = try_parse_hf_config(R"({"architectures": ["Phi3ForCausalLM"], "hidden_size": 64,
      "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 300,
      "hidden_act": "silu", "sliding_window": 2047, "max_position_embeddings": 4096, "rope_scaling": null,
      "tie_word_embeddings": false})", "phi3.json");
  if (!phi3) FAIL(phi3.error().message);
  CHECK(phi3->sliding_window == 2047);
  CHECK(phi3->window_period == 0);
  CHECK(phi3->layer_windowed(1));
  CHECK(phi3->max_seq_len == 4096);
  // Phi-3.5-mini's LongRoPE: factors per rotary pair (here 3 of 4 of 16 dimensions: 6).
  const std::string phi35 = R"({"architectures": ["Phi3ForCausalLM"], "hidden_size": 64,
      "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 300,
      "partial_rotary_factor": 0.75, "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
      "rope_scaling": {"type": "longrope", "short_factor": [1.0, 1.1, 1.2, 1.3, 1.4, 1.5],
                       "long_factor": )";
  auto longrope = try_parse_hf_config(phi35 + R"([1, 2, 4, 8, 16, 32]}})", "phi35.json");
  if (!longrope) FAIL(longrope.error().message);
  CHECK(longrope->scaling.type == rope_scaling_type::longrope);
  CHECK(longrope->scaling.original_max_position == 4096);
  CHECK(longrope->scaling.factor == 32.0f);
  CHECK(longrope->scaling.long_factor[5] == 32.0f);
  CHECK(longrope->scaling.short_factor[1] == 1.1f);
  auto short_list = try_parse_hf_config(phi35 + R"([1, 2, 4]}})", "phi35x.json");
  REQUIRE_FALSE(short_list);
  CHECK(short_list.error().message.find("LongRoPE needs 6") != std::string::npos);
  auto gelu_llama = try_parse_hf_config(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64,
      "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 300,
      "hidden_act": "gelu"})", "gl.json");
  REQUIRE_FALSE(gelu_llama);
  CHECK(gelu_llama.error().code == errc::unsupported);
}

TEST_CASE("Phi-3's fused projections are split into views of the file's rows", "[core][family][gguf]") {
  auto c = drawn_as("phi3");
  auto w = make_dummy_weights(c, 4, nullptr);
  REQUIRE(w.has_value());
  const auto path = temp_path("phi3_fused.gguf");
  REQUIRE(try_write_gguf_model(*w, byte_gguf_vocab(300), path, {"phi3", 32}).has_value());
  auto file = gguf_file::try_open(path);
  REQUIRE(file.has_value());
  CHECK(file->find_tensor("blk.0.attn_qkv.weight") != nullptr);
  CHECK(file->find_tensor("blk.0.attn_q.weight") == nullptr);
  CHECK(file->find_tensor("blk.0.ffn_gate.weight") == nullptr);
  const auto* up = file->find_tensor("blk.0.ffn_up.weight");
  REQUIRE(up != nullptr);
  CHECK(up->ne == std::vector<std::int64_t>{c.dim, 2 * c.hidden_dim});
  auto loaded = try_load_gguf_model(path);
  if (!loaded) FAIL(loaded.error().message);
  const auto& l = loaded->weights.layers[0];
  CHECK(l.wq == w->layers[0].wq);
  CHECK(l.wk == w->layers[0].wk);
  CHECK(l.wv == w->layers[0].wv);
  CHECK(l.w_gate == w->layers[0].w_gate);
  CHECK(l.w_up == w->layers[0].w_up);
  // Views into the one fused tensor: q's rows end where k's begin.
  CHECK(l.wq.bytes().data() + l.wq.bytes().size() == l.wk.bytes().data());
}

TEST_CASE("Gemma 3's multimodal checkpoint loads as its text decoder", "[core][family][hf_model]") {
  // A Gemma3ForConditionalGeneration folder as the Hub has them: the decoder's fields in
  // text_config (most left at Gemma3TextConfig's defaults), its tensors under
  // language_model.model., a vision tower beside them.
  auto c = drawn_as("gemma3");
  c.num_heads = 8;  // text_config's defaults: 8 heads, 4 KV heads of 256
  c.num_kv_heads = 4;
  c.head_dim = 256;
  c.sliding_window = 16;
  c.rope_theta = 1e6f;
  c.max_seq_len = 131072;
  c.norm_eps = 1e-6f;
  auto w = make_dummy_weights(c, 21);
  REQUIRE(w.has_value());
  vary_norms(*w);
  const auto plain = temp_path("gemma3_text_hf");
  REQUIRE(write_hf_model_folder(*w, plain, tensor_dtype::f32, {}).has_value());
  auto store = tensor_store::try_open_folder(plain, file_load::read);
  REQUIRE(store.has_value());
  std::deque<std::vector<float>> values;
  std::vector<tensor_to_write> renamed;
  for (const auto& name : store->names()) {
    const tensor_view* view = store->find(name);
    std::int64_t count = 1;
    for (auto n : view->shape) count *= n;
    values.emplace_back(std::size_t(count));
    REQUIRE(try_convert_to_f32(*view, values.back()).has_value());
    REQUIRE(name.starts_with("model."));
    renamed.push_back({"language_model." + name, view->shape, values.back(), tensor_dtype::f32});
  }
  const std::vector<float> vision(16, 0.5f);
  renamed.push_back({"vision_tower.vision_model.embeddings.patch_embedding.weight", {4, 4}, vision, tensor_dtype::f32});
  const auto folder = temp_path("gemma3_multimodal_hf");
  fs::create_directories(folder);
  REQUIRE(try_write_safetensors(folder / "model.safetensors", renamed, {{"format", "pt"}}).has_value());
  std::ofstream(folder / "config.json") << R"({"architectures": ["Gemma3ForConditionalGeneration"],
      "model_type": "gemma3", "eos_token_id": [1, 106],
      "text_config": {"hidden_size": )" << c.dim << R"(, "intermediate_size": )" << c.hidden_dim << R"(,
        "model_type": "gemma3_text", "num_hidden_layers": )" << c.num_layers << R"(, "sliding_window": 16,
        "vocab_size": 300, "rope_scaling": null},
      "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 4}})";
  auto loaded = try_load_hf_model(folder);
  if (!loaded) FAIL(loaded.error().message);
  const auto& got = loaded->weights;
  CHECK(got.config.architecture == "Gemma3ForCausalLM");
  CHECK(got.config.num_heads == 8);
  CHECK(got.config.num_kv_heads == 4);
  CHECK(got.config.head_dim == 256);
  CHECK(got.config.window_period == 6);
  CHECK(got.config.rope_local_theta == 10000.0f);
  CHECK(got.config.tied_embeddings);
  CHECK(loaded->eos_ids == std::vector<token_id>{1, 106});
  check_same_layers(got.config, c);
  CHECK(got.token_embedding == w->token_embedding);
  CHECK(got.layers[1].wk == w->layers[1].wk);
  CHECK(got.layers[1].post_ffn_norm[3] == Approx(w->layers[1].post_ffn_norm[3]));
}

TEST_CASE("per-layer window flags give their period, or none when no period fits", "[core][family]") {
  CHECK(window_period_of({true, true, true}) == 0);                                 // every layer windowed
  CHECK(window_period_of({true, false, true, false}) == 2);                        // Gemma 2, gpt-oss
  CHECK(window_period_of({true, true, true, true, true, false, true, true}) == 6);  // Gemma 3
  CHECK(window_period_of({false, false}) == 1);                                    // none windowed
  CHECK_FALSE(window_period_of({false, true, false}).has_value());                 // global first, then windowed
  CHECK_FALSE(window_period_of({true, false, false, true}).has_value());
}

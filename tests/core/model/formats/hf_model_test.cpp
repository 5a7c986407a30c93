#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <unistd.h>

#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/hf_model.hpp"
#include "core/model/formats/hf_writer.hpp"
#include "core/model/formats/llama2c.hpp"
#include "dtypes/half.hpp"
#include "tests/shared_data.hpp"
#include "tests/test_shapes.hpp"
#include "tests/test_weights.hpp"

using namespace inflight;

namespace {

struct model_dir {
  std::filesystem::path path;
  explicit model_dir(const std::string& tag) {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("inflight_hf_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
  }
  ~model_dir() { std::filesystem::remove_all(path); }
};

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// GQA (4 heads, 2 KV heads), untied classifier, Qwen2 q/k/v biases.
model_config small_config() {
  auto c = test::small_config();
  c.architecture = "Qwen2ForCausalLM";
  c.norm_eps = 1e-6f;
  c.rope_theta = 1000000.0f;
  c.rope = rope_style::half;
  c.tied_embeddings = false;
  c.attention_bias = true;
  return c;
}

// Every weight vector of a model in one fixed order, for element-wise comparison.
std::vector<std::vector<float>> all_tensors(const model_weights& w) {
  using test::values_of;
  std::vector<std::vector<float>> out{values_of(w.token_embedding), w.final_norm, values_of(w.classifier)};
  for (const auto& l : w.layers) {
    for (const auto& t : {l.attn_norm, values_of(l.wq), values_of(l.wk), values_of(l.wv), values_of(l.wo), l.bq,
                          l.bk, l.bv, l.ffn_norm, values_of(l.w_gate), values_of(l.w_down), values_of(l.w_up)}) {
      out.push_back(t);
    }
  }
  return out;
}

template <class Round>
void require_same_weights(const model_weights& expected, const model_weights& found, Round round) {
  const auto a = all_tensors(expected), b = all_tensors(found);
  REQUIRE(a.size() == b.size());
  for (std::size_t t = 0; t < a.size(); ++t) {
    REQUIRE(a[t].size() == b[t].size());
    for (std::size_t i = 0; i < a[t].size(); ++i) {
      if (round(a[t][i]) != b[t][i]) REQUIRE(round(a[t][i]) == b[t][i]);  // one assertion per failure
    }
  }
}

void check_same_shape(const model_config& a, const model_config& b) {
  CHECK(a.architecture == b.architecture);
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
  CHECK(a.scaling.type == b.scaling.type);
}

std::vector<float> matvec(const std::vector<float>& w, const std::vector<float>& x, std::size_t rows) {
  std::vector<float> y(rows, 0.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < x.size(); ++c) y[r] += w[r * x.size() + c] * x[c];
  }
  return y;
}

// Reference RoPE on one head vector, in either pairing.
void rope(std::vector<float>& v, std::size_t offset, int head_dim, int pos, bool interleaved) {
  for (int i = 0; i < head_dim / 2; ++i) {
    const double angle = pos * std::pow(10000.0, -2.0 * i / head_dim);
    const std::size_t a = offset + (interleaved ? 2 * i : i);
    const std::size_t b = offset + (interleaved ? 2 * i + 1 : i + head_dim / 2);
    const double x = v[a], y = v[b];
    v[a] = float(x * std::cos(angle) - y * std::sin(angle));
    v[b] = float(x * std::sin(angle) + y * std::cos(angle));
  }
}

// The attention logit of query head 0 at position 7 against key head 0 at position 3.
double attention_logit(const layer_weights& layer, const model_config& c, const std::vector<float>& x,
                       bool interleaved) {
  auto q = matvec(test::values_of(layer.wq), x, std::size_t(c.q_dim()));
  auto k = matvec(test::values_of(layer.wk), x, std::size_t(c.kv_dim()));
  rope(q, 0, c.head_dim, 7, interleaved);
  rope(k, 0, c.head_dim, 3, interleaved);
  double dot = 0;
  for (int i = 0; i < c.head_dim; ++i) dot += double(q[std::size_t(i)]) * k[std::size_t(i)];
  return dot;
}

}  // namespace

TEST_CASE("config.json of Llama 3 with rope scaling parses", "[core][hf_model]") {
  const auto config = try_parse_hf_config(R"({
    "architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 8192,
    "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
    "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "max_position_embeddings": 131072,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "tie_word_embeddings": true, "vocab_size": 128256, "hidden_act": "silu", "attention_bias": false})",
                                          "llama3.json");
  REQUIRE(config);
  CHECK(config->architecture == "LlamaForCausalLM");
  CHECK(config->dim == 2048);
  CHECK(config->hidden_dim == 8192);
  CHECK(config->num_layers == 16);
  CHECK(config->num_heads == 32);
  CHECK(config->num_kv_heads == 8);
  CHECK(config->head_dim == 64);
  CHECK(config->norm_eps == 1e-5f);
  CHECK(config->rope_theta == 500000.0f);
  CHECK(config->max_seq_len == 131072);
  CHECK(config->rope == rope_style::half);
  CHECK(config->scaling.type == rope_scaling_type::llama3);
  CHECK(config->scaling.factor == 32.0f);
  CHECK(config->scaling.low_freq_factor == 1.0f);
  CHECK(config->scaling.high_freq_factor == 4.0f);
  CHECK(config->scaling.original_max_position == 8192);
  CHECK(config->tied_embeddings);
  CHECK_FALSE(config->attention_bias);
  CHECK(config->vocab_size == 128256);
}

TEST_CASE("config.json defaults and per-architecture rules", "[core][hf_model]") {
  const std::string base = R"("hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                              "num_attention_heads": 4, "vocab_size": 100)";
  auto llama = try_parse_hf_config(R"({"architectures": ["LlamaForCausalLM"], )" + base + "}", "c");
  REQUIRE(llama);
  CHECK(llama->num_kv_heads == 4);  // defaults to the number of heads
  CHECK(llama->head_dim == 16);     // defaults to hidden / heads
  CHECK(llama->rope_theta == 10000.0f);
  CHECK(llama->max_seq_len == 2048);
  CHECK_FALSE(llama->tied_embeddings);
  CHECK_FALSE(llama->attention_bias);
  CHECK_FALSE(llama->scaling.enabled());

  auto biased = try_parse_hf_config(R"({"architectures": ["LlamaForCausalLM"], "attention_bias": true,
                                        "rope_scaling": null, "head_dim": null, )" + base + "}", "c");
  REQUIRE(biased);
  CHECK(biased->attention_bias);
  CHECK(biased->head_dim == 16);

  auto qwen = try_parse_hf_config(R"({"architectures": ["Qwen2ForCausalLM"], "use_sliding_window": false,
                                      "sliding_window": 32, )" + base + "}", "c");
  REQUIRE(qwen);
  CHECK(qwen->attention_bias);
  CHECK(qwen->max_seq_len == 2048);
  CHECK(qwen->sliding_window == 0);  // use_sliding_window false

  auto mistral = try_parse_hf_config(R"({"architectures": ["MistralForCausalLM"], "sliding_window": 512,
                                         "max_position_embeddings": 4096, "head_dim": 32, )" + base + "}", "c");
  REQUIRE(mistral);
  CHECK(mistral->head_dim == 32);
  CHECK(mistral->q_dim() == 128);
  CHECK(mistral->max_seq_len == 4096);  // the window no longer caps the context
  CHECK(mistral->sliding_window == 512);
  CHECK(mistral->window_period == 0);
  CHECK(mistral->layer_windowed(1));

  auto old_key = try_parse_hf_config(R"({"architectures": ["LlamaForCausalLM"],
      "rope_scaling": {"type": "llama3", "factor": 8.0}, )" + base + "}", "c");
  REQUIRE(old_key);
  CHECK(old_key->scaling.type == rope_scaling_type::llama3);
  CHECK(old_key->scaling.factor == 8.0f);
  CHECK(old_key->scaling.original_max_position == 8192);
}

TEST_CASE("config.json problems give clear errors", "[core][hf_model]") {
  const std::string base = R"("hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                              "num_attention_heads": 4, "vocab_size": 100)";
  const auto expect = [](const std::string& text, errc code, const std::string& needle) {
    auto config = try_parse_hf_config(text, "cfg.json");
    REQUIRE_FALSE(config);
    INFO(config.error().message);
    CHECK(config.error().code == code);
    CHECK(config.error().message.find(needle) != std::string::npos);
    CHECK(config.error().message.find("cfg.json") != std::string::npos);
  };
  expect(R"({"architectures": ["GPT2LMHeadModel"], )" + base + "}", errc::unsupported, "'GPT2LMHeadModel'");
  expect("{" + base + "}", errc::unsupported, "architecture");
  expect(R"({"architectures": ["LlamaForCausalLM"], "intermediate_size": 128, "num_hidden_layers": 2,
             "num_attention_heads": 4, "vocab_size": 100})", errc::corrupt_file, "'hidden_size' is missing");
  expect(R"({"architectures": ["LlamaForCausalLM"], "num_key_value_heads": "two", )" + base + "}",
         errc::corrupt_file, "'num_key_value_heads'");
  expect(R"({"architectures": ["LlamaForCausalLM"], "num_key_value_heads": 3, )" + base + "}",
         errc::invalid_argument, "KV heads");
  expect(R"({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": -1, "hidden_size": 64,
             "intermediate_size": 128, "num_attention_heads": 4, "vocab_size": 100})",
         errc::corrupt_file, "'num_hidden_layers'");
  expect(R"({"architectures": ["LlamaForCausalLM"], "rope_scaling": {"rope_type": "dynamic", "factor": 4}, )" + base + "}",
         errc::unsupported, "dynamic");
  expect(R"({"architectures": ["Phi3ForCausalLM"], "rope_scaling": {"rope_type": "longrope", "factor": 4}, )" + base + "}",
         errc::corrupt_file, "'short_factor' must be a list of factors");
  expect(R"({"architectures": ["LlamaForCausalLM"], "rope_scaling": {"rope_type": "yarn", "factor": -2}, )" + base + "}",
         errc::corrupt_file, "'factor' must be positive");
  expect(R"({"architectures": ["LlamaForCausalLM"], "partial_rotary_factor": 0.3, )" + base + "}", errc::corrupt_file,
         "partial_rotary_factor");
  expect(R"({"architectures": ["Qwen3MoeForCausalLM"], "num_experts": 4, "num_experts_per_tok": 6,
             "moe_intermediate_size": 32, )" + base + "}",
         errc::corrupt_file, "exceeds the number of experts");
  expect(R"({"architectures": ["Qwen3MoeForCausalLM"], "num_experts": 4, "num_experts_per_tok": 2,
             "moe_intermediate_size": 32, "mlp_only_layers": [0], )" + base + "}",
         errc::unsupported, "mlp_only_layers");
  expect(R"({"architectures": ["MixtralForCausalLM"], "num_experts_per_tok": 2, )" + base + "}", errc::corrupt_file,
         "'num_local_experts' is missing");
  expect(R"({"architectures": ["LlamaForCausalLM"], "hidden_act": "gelu", )" + base + "}", errc::unsupported,
         "gelu");
  expect(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 66, "intermediate_size": 128,
             "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100})",
         errc::corrupt_file, "head_dim");
  expect(R"({"architectures": ["LlamaForCausalLM"], "rope_theta": 1e300, )" + base + "}", errc::corrupt_file,
         "'rope_theta'");
  expect("not json", errc::corrupt_file, "not a JSON object");
}

TEST_CASE("generation ids accept an id, a list or null", "[core][hf_model]") {
  auto single = try_parse_generation_ids(R"({"eos_token_id": 2, "bos_token_id": 1})", "g", 100);
  REQUIRE(single);
  CHECK(single->eos_ids == std::vector<token_id>{2});
  CHECK(single->bos_id == 1);
  auto list = try_parse_generation_ids(R"({"eos_token_id": [7, 9, 7], "bos_token_id": null})", "g", 100);
  REQUIRE(list);
  CHECK(list->eos_ids == std::vector<token_id>{7, 9});
  CHECK_FALSE(list->bos_id);
  auto none = try_parse_generation_ids("{}", "g", 100);
  REQUIRE(none);
  CHECK(none->eos_ids.empty());
  auto out_of_range = try_parse_generation_ids(R"({"eos_token_id": [1, 100]})", "g", 100);
  REQUIRE_FALSE(out_of_range);
  CHECK(out_of_range.error().code == errc::corrupt_file);
  CHECK(out_of_range.error().message.find("eos_token_id") != std::string::npos);
}

TEST_CASE("hf folder round trip: F32 exact, BF16 and F16 within rounding", "[core][hf_model]") {
  const auto weights = make_dummy_weights(small_config(), 42);
  REQUIRE(weights);
  const generation_ids ids{{5, 6}, 1};
  for (const auto dtype : {tensor_dtype::f32, tensor_dtype::bf16, tensor_dtype::f16}) {
    model_dir dir("roundtrip");
    REQUIRE(write_hf_model_folder(*weights, dir.path, dtype, ids));
    auto loaded = try_load_hf_model(dir.path);
    REQUIRE(loaded);
    check_same_shape(weights->config, loaded->weights.config);
    CHECK(loaded->eos_ids == std::vector<token_id>{5, 6});
    CHECK(loaded->bos_id == 1);
    if (dtype == tensor_dtype::f32) require_same_weights(*weights, loaded->weights, [](float x) { return x; });
    if (dtype == tensor_dtype::bf16) {
      require_same_weights(*weights, loaded->weights, [](float x) { return bf16_to_float(float_to_bf16(x)); });
    }
    if (dtype == tensor_dtype::f16) {
      require_same_weights(*weights, loaded->weights, [](float x) { return fp16_to_float(float_to_fp16(x)); });
    }
  }
}

TEST_CASE("hf folder round trip of a tied Llama with llama3 rope scaling", "[core][hf_model]") {
  model_config c = small_config();
  c.architecture = "LlamaForCausalLM";
  c.attention_bias = false;
  c.tied_embeddings = true;
  c.num_kv_heads = 1;
  c.scaling = rope_scaling{rope_scaling_type::llama3, 16.0f, 2.0f, 8.0f, 4096};
  const auto weights = make_dummy_weights(c, 3);
  REQUIRE(weights);
  CHECK(weights->classifier.empty());
  model_dir dir("tied");
  REQUIRE(write_hf_model_folder(*weights, dir.path));
  CHECK_FALSE(std::filesystem::exists(dir.path / "generation_config.json"));
  auto loaded = try_load_hf_model(dir.path);
  REQUIRE(loaded);
  check_same_shape(c, loaded->weights.config);
  CHECK(loaded->weights.config.scaling.factor == 16.0f);
  CHECK(loaded->weights.config.scaling.low_freq_factor == 2.0f);
  CHECK(loaded->weights.config.scaling.high_freq_factor == 8.0f);
  CHECK(loaded->weights.config.scaling.original_max_position == 4096);
  CHECK(loaded->eos_ids.empty());
  require_same_weights(*weights, loaded->weights, [](float x) { return x; });
  auto config_only = try_load_hf_config(dir.path / "config.json");
  REQUIRE(config_only);
  check_same_shape(c, *config_only);
}

TEST_CASE("hf folder loads from shards listed by an index", "[core][hf_model]") {
  const auto weights = make_dummy_weights(small_config(), 9);
  REQUIRE(weights);
  model_dir dir("sharded");
  REQUIRE(write_hf_model_folder(*weights, dir.path, tensor_dtype::bf16));
  // Re-split the single file by hand: layer 1 and the head go to the second shard.
  std::vector<std::vector<float>> values;
  std::vector<tensor_to_write> shards[2];
  std::string weight_map;
  {
    auto single = safetensors_file::try_open(dir.path / "model.safetensors");
    REQUIRE(single);
    values.reserve(single->tensors().size());
    for (const auto& [name, view] : single->tensors()) {
      values.emplace_back(std::size_t(view.num_elements()));
      REQUIRE(try_convert_to_f32(view, values.back()));
      const int shard = name.starts_with("model.layers.1.") || name.starts_with("lm_head") ? 1 : 0;
      shards[shard].push_back({name, view.shape, values.back(), tensor_dtype::bf16});
      weight_map += std::string(weight_map.empty() ? "" : ", ") + "\"" + name + "\": \"part-" +
                    std::to_string(shard) + ".safetensors\"";
    }
  }
  std::filesystem::remove(dir.path / "model.safetensors");
  REQUIRE(try_write_safetensors(dir.path / "part-0.safetensors", shards[0]));
  REQUIRE(try_write_safetensors(dir.path / "part-1.safetensors", shards[1]));
  write_text(dir.path / "model.safetensors.index.json", "{\"weight_map\": {" + weight_map + "}}");
  auto loaded = try_load_hf_model(dir.path);
  REQUIRE(loaded);
  require_same_weights(*weights, loaded->weights, [](float x) { return bf16_to_float(float_to_bf16(x)); });
}

TEST_CASE("hf folder with a missing, misshapen or wrongly typed tensor names it", "[core][hf_model]") {
  const auto weights = make_dummy_weights(small_config(), 5);
  REQUIRE(weights);
  model_dir dir("broken");
  REQUIRE(write_hf_model_folder(*weights, dir.path));
  auto single = safetensors_file::try_open(dir.path / "model.safetensors");
  REQUIRE(single);
  std::vector<std::vector<float>> values;
  values.reserve(single->tensors().size());
  std::vector<tensor_to_write> all;
  for (const auto& [name, view] : single->tensors()) {
    values.emplace_back(std::size_t(view.num_elements()));
    REQUIRE(try_convert_to_f32(view, values.back()));
    all.push_back({name, view.shape, values.back(), tensor_dtype::f32});
  }
  const auto rewrite_and_load = [&](auto edit) {
    auto tensors = all;
    edit(tensors);
    REQUIRE(try_write_safetensors(dir.path / "model.safetensors", tensors));
    return try_load_hf_model(dir.path);
  };
  const auto find = [](std::vector<tensor_to_write>& list, const std::string& name) {
    return std::find_if(list.begin(), list.end(), [&](const auto& t) { return t.name == name; });
  };

  auto missing = rewrite_and_load([&](auto& list) { list.erase(find(list, "model.layers.1.mlp.up_proj.weight")); });
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == errc::not_found);
  CHECK(missing.error().message.find("'model.layers.1.mlp.up_proj.weight'") != std::string::npos);
  CHECK(missing.error().message.find("[48, 32]") != std::string::npos);

  auto no_head = rewrite_and_load([&](auto& list) { list.erase(find(list, "lm_head.weight")); });
  REQUIRE_FALSE(no_head);
  CHECK(no_head.error().message.find("'lm_head.weight'") != std::string::npos);

  auto no_bias = rewrite_and_load([&](auto& list) { list.erase(find(list, "model.layers.0.self_attn.k_proj.bias")); });
  REQUIRE_FALSE(no_bias);
  CHECK(no_bias.error().message.find("'model.layers.0.self_attn.k_proj.bias'") != std::string::npos);

  auto transposed = rewrite_and_load([&](auto& list) { find(list, "model.layers.0.mlp.down_proj.weight")->shape = {48, 32}; });
  REQUIRE_FALSE(transposed);
  CHECK(transposed.error().code == errc::corrupt_file);
  const auto& message = transposed.error().message;
  CHECK(message.find("'model.layers.0.mlp.down_proj.weight'") != std::string::npos);
  CHECK(message.find("has shape [48, 32], expected [32, 48]") != std::string::npos);
  CHECK(message.find("model.safetensors") != std::string::npos);

  std::vector<std::int32_t> ints(32, 1);
  const std::string header =
      R"({"model.norm.weight": {"dtype": "I32", "shape": [32], "data_offsets": [0, 128]}})";
  {
    std::vector<tensor_to_write> others = all;
    others.erase(find(others, "model.norm.weight"));
    REQUIRE(try_write_safetensors(dir.path / "rest.safetensors", others));
    std::ofstream out(dir.path / "norm.safetensors", std::ios::binary);
    const std::uint64_t length = header.size();
    out.write(reinterpret_cast<const char*>(&length), 8);
    out << header;
    out.write(reinterpret_cast<const char*>(ints.data()), 128);
  }
  std::string weight_map = "\"model.norm.weight\": \"norm.safetensors\"";
  for (const auto& t : all) {
    if (t.name != "model.norm.weight") weight_map += ", \"" + t.name + "\": \"rest.safetensors\"";
  }
  write_text(dir.path / "model.safetensors.index.json", "{\"weight_map\": {" + weight_map + "}}");
  auto wrong_dtype = try_load_hf_model(dir.path);
  REQUIRE_FALSE(wrong_dtype);
  CHECK(wrong_dtype.error().code == errc::unsupported);
  CHECK(wrong_dtype.error().message.find("'model.norm.weight'") != std::string::npos);
  CHECK(wrong_dtype.error().message.find("I32") != std::string::npos);
}

TEST_CASE("rope permutation: exact small case and inverse is the identity", "[core][hf_model]") {
  const std::vector<float> rows{0, 1, 2, 3, 4, 5, 6, 7};  // 2 heads of head_dim 4, one column
  auto half = permute_for_half_rope(rows, 2, 4, 1);
  REQUIRE(half);
  CHECK(*half == std::vector<float>{0, 2, 1, 3, 4, 6, 5, 7});
  CHECK_FALSE(permute_for_half_rope(rows, 2, 3, 1));  // odd head_dim
  CHECK_FALSE(permute_for_half_rope(rows, 3, 4, 1));  // wrong size

  std::mt19937 rng(17);
  for (int round = 0; round < 20; ++round) {
    const int heads = 1 + int(rng() % 5), head_dim = 2 * (1 + int(rng() % 8)), cols = 1 + int(rng() % 6);
    std::vector<float> w(std::size_t(heads * head_dim * cols));
    for (auto& v : w) v = float(rng() % 1000);
    auto there = permute_for_half_rope(w, heads, head_dim, cols);
    REQUIRE(there);
    auto back = permute_for_interleaved_rope(*there, heads, head_dim, cols);
    REQUIRE(back);
    CHECK(*back == w);
    auto other_way = permute_for_half_rope(*permute_for_interleaved_rope(w, heads, head_dim, cols), heads, head_dim, cols);
    CHECK(*other_way == w);
  }
}

TEST_CASE("an interleaved-rope model written as hf keeps its attention scores", "[core][hf_model]") {
  model_config c = small_config();
  c.architecture = "llama2.c";
  c.attention_bias = false;
  c.rope = rope_style::interleaved;
  const auto weights = make_dummy_weights(c, 77);
  REQUIRE(weights);
  model_dir dir("interleaved");
  REQUIRE(write_hf_model_folder(*weights, dir.path, tensor_dtype::f32, {{2}, 1}));
  auto loaded = try_load_hf_model(dir.path);
  REQUIRE(loaded);
  CHECK(loaded->weights.config.rope == rope_style::half);
  CHECK(loaded->weights.config.architecture == "LlamaForCausalLM");
  CHECK(loaded->eos_ids == std::vector<token_id>{2});
  const auto& original = weights->layers[1];
  const auto& written = loaded->weights.layers[1];
  CHECK(written.wv == original.wv);
  CHECK(written.wq != original.wq);
  CHECK(*permute_for_interleaved_rope(written.wq.f32(), c.num_heads, c.head_dim, c.dim) ==
        test::values_of(original.wq));
  CHECK(*permute_for_interleaved_rope(written.wk.f32(), c.num_kv_heads, c.head_dim, c.dim) ==
        test::values_of(original.wk));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> x(std::size_t(c.dim));
  for (auto& v : x) v = normal(rng);
  const double before = attention_logit(original, c, x, true);
  const double after = attention_logit(written, c, x, false);
  CHECK(after == Approx(before).epsilon(1e-4));
  auto half = to_half_rope(*weights);
  REQUIRE(half);
  CHECK(half->layers[0].wk == loaded->weights.layers[0].wk);
}

TEST_CASE("stories260K converted to an hf folder loads back permuted", "[core][hf_model]") {
  const auto path = test::shared_file("models/stories260K/stories260K.bin");
  if (path.empty()) return;
  auto original = load_llama2c(path);
  REQUIRE(original);
  const auto& c = original->config;
  model_dir dir("stories");
  REQUIRE(write_hf_model_folder(*original, dir.path, tensor_dtype::f32, {{2}, 1}));
  auto loaded = try_load_hf_model(dir.path);
  REQUIRE(loaded);
  CHECK(loaded->bos_id == 1);
  CHECK(loaded->weights.config.num_kv_heads == 4);
  CHECK(loaded->weights.config.tied_embeddings);
  auto unpermuted = loaded->weights;
  for (auto& layer : unpermuted.layers) {
    layer.wq = weight_tensor::from_f32(*permute_for_interleaved_rope(layer.wq.f32(), c.num_heads, c.head_dim, c.dim),
                                       layer.wq.rows(), layer.wq.cols());
    layer.wk = weight_tensor::from_f32(
        *permute_for_interleaved_rope(layer.wk.f32(), c.num_kv_heads, c.head_dim, c.dim), layer.wk.rows(),
        layer.wk.cols());
  }
  require_same_weights(*original, unpermuted, [](float x) { return x; });
}

TEST_CASE("dummy weights are reproducible by seed and shaped by the config", "[core][hf_model]") {
  model_config c = small_config();
  c.dim = 256;
  c.hidden_dim = 512;
  c.num_heads = 8;
  c.num_kv_heads = 4;
  c.head_dim = 32;
  c.vocab_size = 1000;
  const auto a = make_dummy_weights(c, 1), b = make_dummy_weights(c, 1), other = make_dummy_weights(c, 2);
  REQUIRE((a && b && other));
  require_same_weights(*a, *b, [](float x) { return x; });
  CHECK(a->layers[0].wq != other->layers[0].wq);
  CHECK(a->layers[0].wq != a->layers[1].wq);
  CHECK((a->token_embedding.rows() == 1000 && a->token_embedding.cols() == 256));
  CHECK((a->classifier.rows() == 1000 && a->classifier.cols() == 256));
  CHECK(a->layers[1].bk.size() == 128);
  CHECK((a->layers[0].w_down.rows() == 256 && a->layers[0].w_down.cols() == 512));
  CHECK(std::all_of(a->layers[1].ffn_norm.begin(), a->layers[1].ffn_norm.end(), [](float v) { return v == 1.0f; }));
  double sum = 0, sum_sq = 0;
  for (float v : a->token_embedding.f32()) {
    sum += v;
    sum_sq += double(v) * v;
  }
  const double n = double(a->token_embedding.num_values());
  CHECK(std::abs(sum / n) < 1e-3);
  CHECK(std::sqrt(sum_sq / n) == Approx(dummy_weight_std).epsilon(0.01));

  c.num_kv_heads = 3;
  auto bad = make_dummy_weights(c, 1);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == errc::invalid_argument);
}

TEST_CASE("writing refuses weights that contradict their config", "[core][hf_model]") {
  auto weights = make_dummy_weights(small_config(), 4);
  REQUIRE(weights);
  model_dir dir("refused");
  auto short_wq = *weights;
  auto& wq = short_wq.layers[0].wq;
  auto fewer = test::values_of(wq);
  fewer.resize(fewer.size() - std::size_t(wq.cols()));
  wq = weight_tensor::from_f32(std::move(fewer), wq.rows() - 1, wq.cols());
  CHECK(write_hf_model_folder(short_wq, dir.path).error().code == errc::invalid_argument);
  short_wq.config.rope = rope_style::interleaved;
  CHECK(write_hf_model_folder(short_wq, dir.path).error().code == errc::invalid_argument);
  auto no_bias = *weights;
  no_bias.config.attention_bias = false;
  CHECK(write_hf_model_folder(no_bias, dir.path).error().code == errc::invalid_argument);
  auto unknown = *weights;
  unknown.config.architecture = "GPT2LMHeadModel";
  CHECK(write_hf_model_folder(unknown, dir.path).error().code == errc::invalid_argument);
  CHECK(write_hf_model_folder(*weights, dir.path, tensor_dtype::i32).error().code == errc::invalid_argument);
}

TEST_CASE("a sentence-transformers folder states its pooling through 1_Pooling/config.json and modules.json",
          "[core][hf_model][embeddings]") {
  const auto weights = make_dummy_weights(small_config(), 42);
  REQUIRE(weights);
  model_dir dir("st_pooling");
  REQUIRE(write_hf_model_folder(*weights, dir.path));
  {
    auto plain = try_load_hf_model(dir.path);  // no modules.json: a plain causal LM states nothing
    REQUIRE(plain);
    CHECK_FALSE(plain->pooling.is_stated());
    CHECK_FALSE(plain->pooling.normalize.has_value());
  }
  std::filesystem::create_directories(dir.path / "1_Pooling");
  write_text(dir.path / "1_Pooling" / "config.json",
             R"({"word_embedding_dimension": 32, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true,
                 "pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false,
                 "pooling_mode_weightedmean_tokens": false, "pooling_mode_lasttoken": false, "include_prompt": true})");
  write_text(dir.path / "modules.json",
             R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                 {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                 {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])");
  auto mean = try_load_hf_model(dir.path);
  REQUIRE(mean);
  CHECK(mean->pooling.kind == pooling_kind::mean);
  CHECK(mean->pooling.stated == "mean");
  CHECK(mean->pooling.normalize == true);
  CHECK_THAT(mean->pooling.source, Catch::Contains("1_Pooling"));
  // Last-token pooling and no Normalize module: not normalised.
  write_text(dir.path / "1_Pooling" / "config.json",
             R"({"pooling_mode_mean_tokens": false, "pooling_mode_lasttoken": true})");
  write_text(dir.path / "modules.json",
             R"([{"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"},
                 {"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
  auto last = try_load_hf_model(dir.path);
  REQUIRE(last);
  CHECK(last->pooling.kind == pooling_kind::last);
  CHECK(last->pooling.normalize == false);
  // A Dense projection after the pooling is stated but not computed.
  write_text(dir.path / "modules.json",
             R"([{"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"},
                 {"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                 {"idx": 2, "path": "2_Dense", "type": "sentence_transformers.models.Dense"}])");
  auto dense = try_load_hf_model(dir.path);
  REQUIRE(dense);
  CHECK_FALSE(dense->pooling.kind.has_value());
  CHECK_THAT(dense->pooling.stated, Catch::Contains("Dense"));
  // A malformed modules.json is a clear error naming the file.
  write_text(dir.path / "modules.json", "{not json");
  auto bad = try_load_hf_model(dir.path);
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("modules.json"));
}

// LoRA adapters on the cpu backend: a PEFT adapter folder (written here) loaded and
// applied per row gives the logits of the base with the adapter merged into its weights;
// a step mixing two adapters and base rows gives each row what it gets alone.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

#include "backends/cpu_backend.hpp"
#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/safetensors.hpp"
#include "core/model/gguf/gguf_writer.hpp"
#include "core/model/lora.hpp"
#include "core/model/lora_registry.hpp"
#include "core/model/model_loader.hpp"

using namespace inflight;
namespace fs = std::filesystem;

namespace {

model_config small_shape() {
  dummy_shape shape;
  shape.hidden_size = 64;
  shape.intermediate_size = 96;
  shape.num_layers = 2;
  shape.num_heads = 4;
  shape.num_kv_heads = 2;
  shape.vocab_size = 300;
  shape.max_position = 128;
  return dummy_model_config(shape);
}

std::shared_ptr<const model_weights> small_model() {
  auto w = make_dummy_weights(small_shape(), 5);
  REQUIRE(w.has_value());
  return std::make_shared<const model_weights>(std::move(*w));
}

struct adapter_spec {
  int rank = 4;
  double alpha = 8;
  bool rslora = false;
  std::vector<std::string> modules = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  tensor_dtype dtype = tensor_dtype::f32;
  unsigned seed = 1;
};

/// A PEFT adapter folder of random updates (B not zero: PEFT starts B at zero, a trained
/// adapter has moved it) for the small shape.
fs::path write_adapter(const std::string& name, const adapter_spec& a) {
  const auto c = small_shape();
  const auto dir = fs::temp_directory_path() / ("inflight-lora-test-" + std::to_string(::getpid())) / name;
  fs::create_directories(dir);
  nlohmann::json config = {{"peft_type", "LORA"}, {"r", a.rank}, {"lora_alpha", a.alpha}, {"use_rslora", a.rslora},
                           {"target_modules", a.modules}, {"base_model_name_or_path", "dummy"}};
  std::ofstream(dir / "adapter_config.json") << config.dump(2);
  std::mt19937 rng(a.seed);
  std::normal_distribution<float> normal(0.0f, 0.2f);
  std::vector<std::vector<float>> storage;
  std::vector<tensor_to_write> tensors;
  storage.reserve(2 * c.num_layers * a.modules.size());
  for (int l = 0; l < c.num_layers; ++l) {
    for (const auto& m : a.modules) {
      const bool mlp = m == "gate_proj" || m == "up_proj" || m == "down_proj";
      const int out = m == "q_proj" ? c.q_dim() : (m == "k_proj" || m == "v_proj") ? c.kv_dim()
                      : (m == "o_proj" || m == "down_proj") ? c.dim : c.hidden_dim;
      const int in = m == "o_proj" ? c.q_dim() : m == "down_proj" ? c.hidden_dim : c.dim;
      const std::string base = "base_model.model.model.layers." + std::to_string(l) + (mlp ? ".mlp." : ".self_attn.") + m;
      for (const auto& [suffix, rows, cols] : {std::tuple{".lora_A.weight", a.rank, in}, std::tuple{".lora_B.weight", out, a.rank}}) {
        auto& values = storage.emplace_back(std::size_t(rows) * cols);
        for (auto& v : values) v = normal(rng);
        tensors.push_back({base + suffix, {rows, cols}, values, a.dtype});
      }
    }
  }
  REQUIRE(try_write_safetensors(dir / "adapter_model.safetensors", tensors).has_value());
  return dir;
}

seq_step step_of(seq_id id, const std::vector<token_id>& tokens, std::vector<block_id> blocks, int adapter) {
  seq_step s;
  s.id = id;
  s.tokens = tokens;
  s.block_table = std::move(blocks);
  s.do_sample = true;
  s.adapter = adapter;
  return s;
}

using adapter_ptr = std::shared_ptr<const lora_adapter>;

/// The logits after `tokens` alone in a step (blocks 0-1), through `adapter` (null: none).
std::vector<float> logits_of(cpu_backend& be, const std::vector<token_id>& tokens, adapter_ptr adapter) {
  step_plan plan;
  plan.seqs.push_back(step_of(1, tokens, {0, 1}, adapter ? 0 : -1));
  if (adapter) plan.adapters.push_back(std::move(adapter));
  auto out = be.forward(plan);
  REQUIRE(out.has_value());
  return {out->begin(), out->end()};
}

float max_diff(std::span<const float> a, std::span<const float> b) {
  REQUIRE(a.size() == b.size());
  float worst = 0.0f;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

std::vector<token_id> prompt(int n, int salt) {
  std::vector<token_id> t;
  for (int i = 0; i < n; ++i) t.push_back(token_id((i * 37 + salt) % 290 + 3));
  return t;
}

}  // namespace

TEST_CASE("lora: an adapter applied per row gives the logits of its merged model (rank 4, 8, 16 rsLoRA bf16, 64 rsLoRA)",
          "[backend][lora]") {
  const auto base = small_model();
  const adapter_spec specs[] = {{4, 8, false},
                                {8, 16, false, {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"},
                                 tensor_dtype::f16, 4},
                                {16, 16, true, {"q_proj", "v_proj", "down_proj"}, tensor_dtype::bf16, 2},
                                {64, 32, true, {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"},
                                 tensor_dtype::f32, 6}};
  for (const auto& spec : specs) {
    INFO("rank " << spec.rank);
    auto adapter = try_load_peft_adapter(write_adapter("a" + std::to_string(spec.rank), spec), base->config);
    if (!adapter) FAIL(adapter.error().message);
    CHECK(adapter->rank == spec.rank);
    const float scale = float(spec.rslora ? spec.alpha / std::sqrt(spec.rank) : spec.alpha / spec.rank);
    CHECK(adapter->layers[1][int(lora_module::v)].scale == Approx(scale));
    CHECK(adapter->layers[0][int(lora_module::k)].a.empty() == (spec.modules.size() == 3));  // untargeted: none
    auto merged = try_merge_lora(*base, *adapter);
    REQUIRE(merged.has_value());

    auto with_adapter = cpu_backend::create(base, kv_cache_config{16, 8, 0});
    auto merged_be = cpu_backend::create(std::make_shared<const model_weights>(std::move(*merged)), kv_cache_config{16, 8, 0});
    REQUIRE(with_adapter.has_value());
    REQUIRE(merged_be.has_value());
    const auto tokens = prompt(20, 7);
    const auto applied = logits_of(**with_adapter, tokens, std::make_shared<const lora_adapter>(std::move(*adapter)));
    const auto expected = logits_of(**merged_be, tokens, nullptr);
    const auto plain = logits_of(**with_adapter, tokens, nullptr);
    CHECK(max_diff(applied, expected) < 2e-4f);
    CHECK(max_diff(plain, expected) > 1e-2f);  // the adapter changes the logits: a test of something
    CHECK(max_diff(plain, logits_of(**merged_be, tokens, nullptr)) > 1e-2f);
  }
}

TEST_CASE("lora: a step mixing two adapters and base rows gives each row what it gets alone", "[backend][lora]") {
  const auto base = small_model();
  auto a0 = try_load_peft_adapter(write_adapter("m0", {4, 8, false}), base->config);
  auto a1 = try_load_peft_adapter(write_adapter("m1", {8, 4, true, {"o_proj", "gate_proj", "up_proj"}, tensor_dtype::f16, 3}),
                                  base->config);
  REQUIRE(a0.has_value());
  REQUIRE(a1.has_value());
  auto be = cpu_backend::create(base, kv_cache_config{16, 16, 0});
  REQUIRE(be.has_value());
  const adapter_ptr p0 = std::make_shared<const lora_adapter>(std::move(*a0));
  const adapter_ptr p1 = std::make_shared<const lora_adapter>(std::move(*a1));
  const auto t0 = prompt(9, 1), t1 = prompt(14, 2), t2 = prompt(5, 3), t3 = prompt(11, 4);
  // Alone first (each in blocks 0-1), then all four in one step in blocks of their own.
  const auto alone0 = logits_of(**be, t0, p0), alone1 = logits_of(**be, t1, nullptr), alone2 = logits_of(**be, t2, p1),
             alone3 = logits_of(**be, t3, p0);
  step_plan mixed;
  mixed.adapters = {p0, p1};
  mixed.seqs.push_back(step_of(1, t0, {2, 3}, 0));
  mixed.seqs.push_back(step_of(2, t1, {4, 5}, -1));
  mixed.seqs.push_back(step_of(3, t2, {6, 7}, 1));
  mixed.seqs.push_back(step_of(4, t3, {8, 9}, 0));
  auto out = (*be)->forward(mixed);
  REQUIRE(out.has_value());
  const std::size_t vocab = 300;
  REQUIRE(out->size() == 4 * vocab);
  CHECK(max_diff(out->subspan(0, vocab), alone0) < 1e-5f);
  CHECK(max_diff(out->subspan(vocab, vocab), alone1) < 1e-5f);
  CHECK(max_diff(out->subspan(2 * vocab, vocab), alone2) < 1e-5f);
  CHECK(max_diff(out->subspan(3 * vocab, vocab), alone3) < 1e-5f);
  CHECK(max_diff(alone2, logits_of(**be, t2, nullptr)) > 1e-2f);  // adapter 1 does change its row

  // An adapter the step does not carry, or a missing one, is a bad plan, not a crash.
  step_plan bad;
  bad.adapters = {p0};
  bad.seqs.push_back(step_of(1, t0, {0, 1}, 1));
  CHECK((*be)->forward(bad).error().code == errc::invalid_argument);
  bad.adapters = {nullptr};
  bad.seqs.back().adapter = 0;
  CHECK((*be)->forward(bad).error().code == errc::invalid_argument);
}

TEST_CASE("lora: a PEFT folder that does not fit the base is refused, naming what", "[backend][lora]") {
  const auto c = small_shape();
  auto embed = write_adapter("embed", {4, 8, false, {"q_proj"}});
  {
    nlohmann::json config = {{"peft_type", "LORA"}, {"r", 4}, {"lora_alpha", 8}, {"target_modules", {"q_proj", "embed_tokens"}}};
    std::ofstream(embed / "adapter_config.json") << config.dump();
  }
  auto e = try_load_peft_adapter(embed, c);
  REQUIRE_FALSE(e);
  CHECK_THAT(e.error().message, Catch::Contains("target module 'embed_tokens'"));

  auto wrong_rank = write_adapter("rank", {4, 8, false, {"q_proj"}});
  std::ofstream(wrong_rank / "adapter_config.json")
      << nlohmann::json({{"r", 8}, {"lora_alpha", 8}, {"target_modules", {"q_proj"}}}).dump();
  auto r = try_load_peft_adapter(wrong_rank, c);
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("lora_A.weight' has shape [4, 64], the base model needs [8, 64]"));

  auto small = c;
  small.num_layers = 1;
  auto layers = try_load_peft_adapter(write_adapter("layers", {4, 8, false, {"q_proj"}}), small);
  REQUIRE_FALSE(layers);
  CHECK_THAT(layers.error().message, Catch::Contains("is for layer 1; the base model has 1"));

  auto none = try_load_peft_adapter(fs::temp_directory_path() / "inflight-no-such-adapter", c);
  REQUIRE_FALSE(none);
  CHECK_THAT(none.error().message, Catch::Contains("no adapter_config.json"));
}

TEST_CASE("lora: a llama.cpp GGUF LoRA file holds the same adapter as its PEFT folder", "[backend][lora]") {
  const auto c = small_shape();
  REQUIRE(c.rope == rope_style::half);  // the Q/K rows of the GGUF file must then move back
  auto peft = try_load_lora_adapter(write_adapter("gguf-src", {4, 8, false}), c);
  REQUIRE(peft.has_value());
  // Written as llama.cpp's convert_lora_to_gguf.py does: Q/K rows of B in the GGUF order.
  gguf_writer w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.type", "adapter");
  w.set_string("adapter.type", "lora");
  w.set_f32("adapter.lora.alpha", 8.0f);
  const char* names[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
  for (int l = 0; l < c.num_layers; ++l) {
    for (int m = 0; m < num_lora_modules; ++m) {
      const auto& u = peft->layers[std::size_t(l)][std::size_t(m)];
      auto b = u.b;
      if (m == int(lora_module::q) || m == int(lora_module::k)) {
        const int heads = m == int(lora_module::q) ? c.num_heads : c.num_kv_heads, hd = c.head_dim;
        for (int h = 0; h < heads; ++h)
          for (int i = 0; i < hd / 2; ++i)
            for (int r = 0; r < u.rank; ++r) {
              b[std::size_t((h * hd + 2 * i) * u.rank + r)] = u.b[std::size_t((h * hd + i) * u.rank + r)];
              b[std::size_t((h * hd + 2 * i + 1) * u.rank + r)] = u.b[std::size_t((h * hd + i + hd / 2) * u.rank + r)];
            }
      }
      const std::string base = "blk." + std::to_string(l) + "." + names[m] + ".weight.lora_";
      const auto out = std::int64_t(b.size()) / u.rank, in = std::int64_t(u.a.size()) / u.rank;
      REQUIRE(w.try_add_matrix(base + "a", weight_tensor::from_f32(u.a, u.rank, in)).has_value());
      REQUIRE(w.try_add_matrix(base + "b", weight_tensor::from_f32(b, out, u.rank)).has_value());
    }
  }
  const auto path = fs::temp_directory_path() / ("inflight-lora-test-" + std::to_string(::getpid())) / "adapter.gguf";
  REQUIRE(w.try_write(path).has_value());
  auto gguf = try_load_lora_adapter(path, c);
  if (!gguf) FAIL(gguf.error().message);
  CHECK(gguf->rank == 4);
  for (int l = 0; l < c.num_layers; ++l) {
    for (int m = 0; m < num_lora_modules; ++m) {
      INFO("layer " << l << " module " << peft_name(lora_module(m)));
      const auto& a = gguf->layers[std::size_t(l)][std::size_t(m)];
      const auto& b = peft->layers[std::size_t(l)][std::size_t(m)];
      CHECK(a.a == b.a);
      CHECK(a.b == b.b);
      CHECK(a.scale == b.scale);
    }
  }
  // A GGUF model file is not an adapter.
  gguf_writer not_adapter;
  not_adapter.set_string("general.architecture", "llama");
  REQUIRE(not_adapter.try_write(path).has_value());
  auto refused = try_load_lora_adapter(path, c);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::Contains("is not a GGUF adapter"));
}

TEST_CASE("lora registry: adapters by name, and idle ones past max_cpu_loras dropped and read again", "[backend][lora]") {
  const auto base = small_model();
  const auto dir_a = write_adapter("reg-a", {4, 8, false});
  const auto dir_b = write_adapter("reg-b", {8, 4, true, {"q_proj", "down_proj"}, tensor_dtype::f32, 9});
  lora_registry reg(base->config, 1);
  const auto loaded = [&](const std::string& name) {
    for (const auto& e : reg.list())
      if (e.name == name) return e.is_loaded;
    FAIL("no entry " << name);
    return false;
  };
  REQUIRE(reg.add("a", dir_a.string()).has_value());
  REQUIRE(reg.add("b", dir_b.string()).has_value());
  CHECK(reg.names() == std::vector<std::string>{"a", "b"});
  CHECK(reg.num_loads() == 2);
  CHECK(!loaded("a"));  // idle and least recently used: dropped for b
  CHECK(loaded("b"));

  auto pa = reg.acquire("a");  // read again from its folder
  REQUIRE(pa.has_value());
  CHECK(reg.num_loads() == 3);
  CHECK((*pa)->name == "a");
  CHECK(loaded("a"));
  CHECK(!loaded("b"));
  auto pb = reg.acquire("b");  // a is in use: it stays, past the limit
  REQUIRE(pb.has_value());
  CHECK(reg.num_loads() == 4);
  CHECK(loaded("a"));
  CHECK(loaded("b"));
  CHECK(reg.acquire("a").value() == *pa);  // in memory: the same copy, no load
  CHECK(reg.num_loads() == 4);

  // What was read again is the adapter itself.
  auto be = cpu_backend::create(base, kv_cache_config{16, 8, 0});
  REQUIRE(be.has_value());
  auto fresh = try_load_lora_adapter(dir_a, base->config);
  REQUIRE(fresh.has_value());
  const auto tokens = prompt(12, 5);
  const auto through_a = logits_of(**be, tokens, *pa);
  CHECK(max_diff(through_a, logits_of(**be, tokens, std::make_shared<const lora_adapter>(std::move(*fresh)))) == 0.0f);
  CHECK(max_diff(through_a, logits_of(**be, tokens, *pb)) > 1e-2f);

  // Unloaded while a request holds it: the request keeps a whole adapter.
  const auto id_a = (*pa)->id;
  REQUIRE(reg.remove("a").has_value());
  CHECK(reg.names() == std::vector<std::string>{"b"});
  CHECK(max_diff(through_a, logits_of(**be, tokens, *pa)) == 0.0f);
  CHECK(reg.acquire("a").error().code == errc::not_found);
  CHECK(reg.remove("a").error().code == errc::not_found);
  // A name registered again is another adapter to the prefix cache: another id.
  REQUIRE(reg.add("a", dir_b.string()).has_value());
  CHECK(reg.acquire("a").value()->id != id_a);

  auto taken = reg.add("b", dir_a.string());
  REQUIRE(!taken);
  CHECK(taken.error().code == errc::invalid_argument);
  CHECK_THAT(taken.error().message, Catch::Contains("already loaded"));
  auto missing = reg.add("c", (fs::temp_directory_path() / "inflight-no-such-adapter").string());
  REQUIRE(!missing);
  CHECK_THAT(missing.error().message, Catch::Contains("LoRA adapter c"));
  CHECK(!reg.contains("c"));

  lora_registry unlimited(base->config, 0);
  REQUIRE(unlimited.add("a", dir_a.string()).has_value());
  REQUIRE(unlimited.add("b", dir_b.string()).has_value());
  for (const auto& e : unlimited.list()) CHECK(e.is_loaded);
}

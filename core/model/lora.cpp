#include "core/model/lora.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <regex>

#include "core/model/formats/safetensors.hpp"
#include "core/model/gguf/gguf.hpp"

namespace inflight {

namespace fs = std::filesystem;
using json = nlohmann::json;

const char* peft_name(lora_module m) {
  static constexpr const char* names[] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  return names[int(m)];
}

namespace {

/// (out, in) of a module's matrix in a base of `c`.
std::pair<int, int> shape_of(lora_module m, const model_config& c) {
  switch (m) {
    case lora_module::q: return {c.q_dim(), c.dim};
    case lora_module::k:
    case lora_module::v: return {c.kv_dim(), c.dim};
    case lora_module::o: return {c.dim, c.q_dim()};
    case lora_module::gate:
    case lora_module::up: return {c.dense_hidden_dim(), c.dim};
    default: return {c.dim, c.dense_hidden_dim()};
  }
}

std::optional<lora_module> module_named(const std::string& name) {
  for (int m = 0; m < num_lora_modules; ++m)
    if (name == peft_name(lora_module(m))) return lora_module(m);
  return std::nullopt;
}

/// B's rows of Q or K in Hugging Face's order (pairs i, i + rotary/2 of each head) moved
/// to a base whose rows pair (2i, 2i + 1) (llama2.c and GGUF Llama files).
void to_interleaved(std::vector<float>& b, int rank, int num_heads, int head_dim, int rotary) {
  std::vector<float> head(std::size_t(head_dim) * rank);
  for (int h = 0; h < num_heads; ++h) {
    float* rows = b.data() + std::size_t(h) * head_dim * rank;
    std::copy(rows, rows + head.size(), head.begin());
    for (int i = 0; i < rotary / 2; ++i) {
      std::copy_n(head.data() + std::size_t(i) * rank, rank, rows + std::size_t(2 * i) * rank);
      std::copy_n(head.data() + std::size_t(i + rotary / 2) * rank, rank, rows + std::size_t(2 * i + 1) * rank);
    }
  }
}

/// The inverse of to_interleaved: a GGUF file's Q/K rows (pairs 2i, 2i + 1) moved to a
/// base in Hugging Face's order.
void to_half(std::vector<float>& b, int rank, int num_heads, int head_dim, int rotary) {
  std::vector<float> head(std::size_t(head_dim) * rank);
  for (int h = 0; h < num_heads; ++h) {
    float* rows = b.data() + std::size_t(h) * head_dim * rank;
    std::copy(rows, rows + head.size(), head.begin());
    for (int i = 0; i < rotary / 2; ++i) {
      std::copy_n(head.data() + std::size_t(2 * i) * rank, rank, rows + std::size_t(i) * rank);
      std::copy_n(head.data() + std::size_t(2 * i + 1) * rank, rank, rows + std::size_t(i + rotary / 2) * rank);
    }
  }
}

/// The layer a LoRA tensor's name says (`pattern`'s first group; `m` its match): an
/// error for a name that is no LoRA update of a layer, or a layer the base lacks.
result<int> try_layer_of(const std::string& name, const std::regex& pattern, std::smatch& m, const model_config& c,
                         const std::string& source) {
  if (!std::regex_match(name, m, pattern))
    return make_error(errc::unsupported, source + ": tensor '" + name + "' is not a LoRA update of a layer's projection");
  const int layer = std::stoi(m[1].str());
  if (layer >= c.num_layers)
    return make_error(errc::invalid_argument, source + ": tensor '" + name + "' is for layer " + std::to_string(layer) +
                                                  "; the base model has " + std::to_string(c.num_layers));
  return layer;
}

/// GGUF's name of a module's matrix in layer blocks.
const char* gguf_name(lora_module m) {
  static constexpr const char* names[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
  return names[int(m)];
}

result<lora_adapter> try_load_gguf_adapter(const fs::path& path, const model_config& c) {
  const std::string source = path.string();
  auto file = gguf_file::try_open(path);
  if (!file) return std::unexpected(file.error());
  const gguf_value* type = file->find("general.type");
  if (type == nullptr || type->as_string().value_or("") != "adapter")
    return make_error(errc::invalid_argument, source + " is not a GGUF adapter (general.type is not \"adapter\")");
  if (const gguf_value* kind = file->find("adapter.type"); kind != nullptr && kind->as_string().value_or("") != "lora")
    return make_error(errc::unsupported, source + ": adapter.type " + std::string(kind->as_string().value_or("?")) +
                                             " (only lora adapters)");
  if (c.moe.enabled())
    return make_error(errc::unsupported, source + ": LoRA adapters on a mixture of experts are not supported");
  const gguf_value* alpha_value = file->find("adapter.lora.alpha");
  static const std::regex tensor_name(R"(blk\.(\d+)\.(\w+)\.weight\.lora_([ab]))");
  lora_adapter adapter;
  adapter.source = source;
  adapter.layers.resize(std::size_t(c.num_layers));
  for (const auto& info : file->tensors()) {
    const std::string name(info.name);
    std::smatch m;
    auto layer = try_layer_of(name, tensor_name, m, c, source);
    if (!layer) return std::unexpected(layer.error());
    int module = -1;
    for (int k = 0; k < num_lora_modules; ++k)
      if (m[2].str() == gguf_name(lora_module(k))) module = k;
    if (module < 0)
      return make_error(errc::unsupported, source + ": tensor '" + name + "' changes '" + m[2].str() +
                                               "', which this server does not apply");
    if (m[3].str() == "b") continue;  // read with its lora_a
    auto a_tensor = file->try_matrix(info);
    const gguf_tensor_info* b_info = file->find_tensor(name.substr(0, name.size() - 1) + "b");
    if (b_info == nullptr) return make_error(errc::not_found, source + ": tensor '" + name + "' has no lora_b");
    auto b_tensor = file->try_matrix(*b_info);
    if (!a_tensor) return std::unexpected(a_tensor.error());
    if (!b_tensor) return std::unexpected(b_tensor.error());
    const auto [out, in_dim] = shape_of(lora_module(module), c);
    const auto rank = a_tensor->rows();
    if (a_tensor->cols() != in_dim || b_tensor->rows() != out || b_tensor->cols() != rank || rank <= 0)
      return make_error(errc::invalid_argument, source + ": '" + name + "' is [" + std::to_string(rank) + " x " +
                                                    std::to_string(a_tensor->cols()) + "] and its lora_b [" +
                                                    std::to_string(b_tensor->rows()) + " x " +
                                                    std::to_string(b_tensor->cols()) + "]; the base model needs [r x " +
                                                    std::to_string(in_dim) + "] and [" + std::to_string(out) + " x r]");
    auto a = try_to_f32(*a_tensor);
    auto b = try_to_f32(*b_tensor);
    if (!a) return std::unexpected(a.error());
    if (!b) return std::unexpected(b.error());
    // llama.cpp writes Q/K updates in its files' row order (pairs 2i, 2i + 1).
    if (c.rope == rope_style::half && (module == int(lora_module::q) || module == int(lora_module::k))) {
      to_half(*b, int(rank), module == int(lora_module::q) ? c.num_heads : c.num_kv_heads, c.head_dim, c.rotary_dims());
    }
    const double alpha = alpha_value != nullptr ? alpha_value->as_float().value_or(double(rank)) : double(rank);
    adapter.layers[std::size_t(*layer)][std::size_t(module)] = {std::move(*a), std::move(*b), int(rank), float(alpha / double(rank))};
    adapter.rank = std::max(adapter.rank, int(rank));
  }
  if (adapter.rank == 0) return make_error(errc::invalid_argument, source + ": the adapter holds no LoRA tensors");
  return adapter;
}

result<std::vector<float>> read_f32(const tensor_store& store, const std::string& name, std::int64_t rows,
                                    std::int64_t cols, const std::string& source) {
  const tensor_view* t = store.find(name);
  if (t == nullptr) return make_error(errc::not_found, source + ": tensor '" + name + "' is missing");
  if (t->shape != std::vector<std::int64_t>{rows, cols}) {
    std::string got;
    for (auto d : t->shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
    return make_error(errc::invalid_argument, source + ": tensor '" + name + "' has shape [" + got + "], the base model needs [" +
                                                  std::to_string(rows) + ", " + std::to_string(cols) + "]");
  }
  std::vector<float> out(std::size_t(rows * cols));
  if (auto ok = try_convert_to_f32(*t, out); !ok)
    return make_error(ok.error().code, source + ": tensor '" + name + "': " + ok.error().message);
  return out;
}

}  // namespace

result<lora_adapter> try_load_peft_adapter(const fs::path& folder, const model_config& c) {
  const std::string source = folder.string();
  std::ifstream in(folder / "adapter_config.json");
  if (!in) return make_error(errc::not_found, source + ": no adapter_config.json (a PEFT LoRA adapter folder has one)");
  const json config = json::parse(in, nullptr, false);
  if (!config.is_object()) return make_error(errc::corrupt_file, source + "/adapter_config.json is not a JSON object");
  if (config.contains("peft_type") && config["peft_type"] != "LORA")
    return make_error(errc::unsupported, source + ": peft_type " + config["peft_type"].dump() + " (only LORA adapters)");
  if (!config.contains("r") || !config["r"].is_number_integer() || config["r"].get<int>() <= 0)
    return make_error(errc::invalid_argument, source + "/adapter_config.json: `r` must be a positive integer");
  const int rank = config["r"].get<int>();
  const double alpha = config.value("lora_alpha", double(rank));
  const bool rslora = config.value("use_rslora", false);
  const float scale = float(rslora ? alpha / std::sqrt(double(rank)) : alpha / rank);
  std::vector<lora_module> targets;
  const auto& modules = config.contains("target_modules") ? config["target_modules"] : json();
  if (!modules.is_array() || modules.empty())
    return make_error(errc::invalid_argument, source + "/adapter_config.json: `target_modules` must list the modules "
                                                       "(a regular expression there is not supported)");
  for (const auto& m : modules) {
    const auto name = m.is_string() ? m.get<std::string>() : m.dump();
    const auto module = module_named(name);
    if (!module)
      return make_error(errc::unsupported, source + ": target module '" + name +
                                               "' is not applied by this server (q_proj, k_proj, v_proj, o_proj, "
                                               "gate_proj, up_proj, down_proj are)");
    targets.push_back(*module);
  }
  if (c.moe.enabled())
    return make_error(errc::unsupported, source + ": LoRA adapters on a mixture of experts are not supported");
  const fs::path weights = fs::exists(folder / "adapter_model.safetensors") ? folder / "adapter_model.safetensors" : fs::path();
  if (weights.empty())
    return make_error(errc::not_found, source + ": no adapter_model.safetensors (adapter_model.bin is not read)");
  auto store = tensor_store::try_open_file(weights);
  if (!store) return std::unexpected(store.error());
  // Every tensor must belong to a layer and module this base has.
  static const std::regex tensor_name(R"((?:.*\.)?layers\.(\d+)\.(?:self_attn|mlp)\.(\w+)\.lora_([AB])(?:\.\w+)?\.weight)");
  std::string prefix;
  for (const auto& name : store->names()) {
    std::smatch m;
    auto layer = try_layer_of(name, tensor_name, m, c, source);
    if (!layer) return std::unexpected(layer.error());
    if (!module_named(m[2].str()))
      return make_error(errc::unsupported, source + ": tensor '" + name + "' changes '" + m[2].str() +
                                               "', which this server does not apply");
    if (prefix.empty()) prefix = name.substr(0, std::size_t(m.position(1)) - std::string("layers.").size());
  }
  lora_adapter adapter;
  adapter.source = source;
  adapter.rank = rank;
  adapter.layers.resize(std::size_t(c.num_layers));
  for (int l = 0; l < c.num_layers; ++l) {
    for (const auto module : targets) {
      const auto [out, in_dim] = shape_of(module, c);
      const bool is_mlp = module == lora_module::gate || module == lora_module::up || module == lora_module::down;
      const std::string base = prefix + "layers." + std::to_string(l) + (is_mlp ? ".mlp." : ".self_attn.") + peft_name(module);
      auto a = read_f32(*store, base + ".lora_A.weight", rank, in_dim, source);
      if (!a) return std::unexpected(a.error());
      auto b = read_f32(*store, base + ".lora_B.weight", out, rank, source);
      if (!b) return std::unexpected(b.error());
      if (c.rope == rope_style::interleaved && (module == lora_module::q || module == lora_module::k)) {
        to_interleaved(*b, rank, module == lora_module::q ? c.num_heads : c.num_kv_heads, c.head_dim, c.rotary_dims());
      }
      adapter.layers[std::size_t(l)][std::size_t(module)] = {std::move(*a), std::move(*b), rank, scale};
    }
  }
  return adapter;
}

result<lora_adapter> try_load_lora_adapter(const fs::path& path, const model_config& config) {
  if (fs::is_directory(path)) return try_load_peft_adapter(path, config);
  if (!fs::exists(path)) return make_error(errc::not_found, path.string() + ": no such adapter folder or GGUF file");
  return try_load_gguf_adapter(path, config);
}

result<model_weights> try_merge_lora(const model_weights& base, const lora_adapter& adapter) {
  model_weights merged = base;
  if (adapter.layers.size() != base.layers.size())
    return make_error(errc::invalid_argument, "the adapter has " + std::to_string(adapter.layers.size()) +
                                                  " layers, the base " + std::to_string(base.layers.size()));
  for (std::size_t l = 0; l < base.layers.size(); ++l) {
    auto& layer = merged.layers[l];
    weight_tensor* matrices[] = {&layer.wq, &layer.wk, &layer.wv, &layer.wo, &layer.w_gate, &layer.w_up, &layer.w_down};
    for (int m = 0; m < num_lora_modules; ++m) {
      const auto& u = adapter.layers[l][std::size_t(m)];
      if (u.a.empty()) continue;
      auto w = try_to_f32(*matrices[m]);
      if (!w) return std::unexpected(w.error());
      const std::int64_t rows = matrices[m]->rows(), cols = matrices[m]->cols();
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < cols; ++j) {
          float delta = 0.0f;
          for (int i = 0; i < u.rank; ++i) delta += u.b[std::size_t(r * u.rank + i)] * u.a[std::size_t(i * cols + j)];
          (*w)[std::size_t(r * cols + j)] += u.scale * delta;
        }
      *matrices[m] = weight_tensor::from_f32(std::move(*w), rows, cols);
    }
  }
  return merged;
}

}  // namespace inflight

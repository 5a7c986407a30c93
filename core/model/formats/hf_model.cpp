#include "core/model/formats/hf_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/base/json_depth.hpp"
#include "core/base/text_file.hpp"
#include "core/model/formats/st_pooling.hpp"
#include "core/model/model_family.hpp"

namespace inflight {

namespace {

using json = nlohmann::json;

// Reads typed fields and keeps the first problem, so parsing reads as a list of fields.
class field_reader {
 public:
  field_reader(const json& object, std::string source) : object_(object), source_(std::move(source)) {}

  int positive_int(const char* key, std::optional<int> fallback = std::nullopt) {
    const json* value = find(key);
    if (value == nullptr) {
      if (!fallback) fail(key, "is missing");
      return fallback.value_or(0);
    }
    if (!value->is_number_integer() || value->get<std::int64_t>() <= 0 ||
        value->get<std::int64_t>() > (std::int64_t(1) << 30)) {
      fail(key, "must be a positive integer, found " + value->dump());
      return 0;
    }
    return int(value->get<std::int64_t>());
  }

  float number(const char* key, float fallback) {
    const json* value = find(key);
    if (value == nullptr) return fallback;
    // Range-checked first: narrowing an out-of-range double to float is undefined.
    if (value->is_number() && std::abs(value->get<double>()) <= double(std::numeric_limits<float>::max())) {
      return float(value->get<double>());
    }
    fail(key, "must be a finite number, found " + value->dump());
    return fallback;
  }

  bool boolean(const char* key, bool fallback) {
    const json* value = find(key);
    if (value == nullptr) return fallback;
    if (value->is_boolean()) return value->get<bool>();
    fail(key, "must be true or false, found " + value->dump());
    return fallback;
  }

  std::optional<std::string> string(const char* key) {
    const json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (value->is_string()) return value->get<std::string>();
    fail(key, "must be a string, found " + value->dump());
    return std::nullopt;
  }

  /// Null counts as absent: HF writes `"head_dim": null` and `"rope_scaling": null`.
  const json* find(const char* key) const {
    const auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }

  void fail(const std::string& key, const std::string& what) {
    if (!error_) error_ = error{errc::corrupt_file, source_ + ": '" + key + "' " + what};
  }

  const std::optional<error>& first_error() const { return error_; }
  const std::string& source() const { return source_; }

 private:
  const json& object_;
  std::string source_;
  std::optional<error> error_;
};

result<std::string> read_architecture(const json& root, const std::string& source) {
  std::string named;
  const auto it = root.find("architectures");
  if (it != root.end() && it->is_array()) {
    for (const auto& item : *it) {
      if (!item.is_string()) continue;
      named = item.get<std::string>();
      if (find_hf_family(named) != nullptr) return named;
    }
  }
  std::string list = family_list(&model_family::hf_architecture);
  for (const auto& f : model_families()) {
    if (!f.hf_alias.empty()) list += ", " + std::string(f.hf_alias);
  }
  return make_error(errc::unsupported, source + ": unsupported architecture '" +
                                           (named.empty() ? std::string("(none)") : named) +
                                           "'; supported: " + list);
}

/// YaRN's attention factor from "attention_factor", or "mscale" / "mscale_all_dim".
float yarn_attention_factor(field_reader& fields, float factor) {
  const auto mscale = [&](float m) { return factor <= 1.0f ? 1.0f : 0.1f * m * std::log(factor) + 1.0f; };
  if (fields.find("attention_factor") != nullptr) return fields.number("attention_factor", 1.0f);
  const float m = fields.number("mscale", 0.0f), all = fields.number("mscale_all_dim", 0.0f);
  if (m != 0.0f && all != 0.0f) return mscale(m) / mscale(all);
  return 0.0f;  // the default, 0.1 ln(factor) + 1
}

result<rope_scaling> read_rope_scaling(const json& root, const std::string& source, int max_position) {
  const auto it = root.find("rope_scaling");
  if (it == root.end() || it->is_null()) return rope_scaling{};
  if (!it->is_object()) return make_error(errc::corrupt_file, source + ": 'rope_scaling' must be an object");
  field_reader fields(*it, source + " rope_scaling");
  auto type = fields.string("rope_type");
  if (!type) type = fields.string("type");
  rope_scaling scaling;
  if (type == "llama3") {
    scaling.type = rope_scaling_type::llama3;
    scaling.factor = fields.number("factor", scaling.factor);
    scaling.low_freq_factor = fields.number("low_freq_factor", scaling.low_freq_factor);
    scaling.high_freq_factor = fields.number("high_freq_factor", scaling.high_freq_factor);
    scaling.original_max_position =
        fields.positive_int("original_max_position_embeddings", scaling.original_max_position);
    if (!fields.first_error() && (scaling.factor <= 0 || scaling.high_freq_factor <= scaling.low_freq_factor)) {
      fields.fail("factor", "must be positive with high_freq_factor > low_freq_factor");
    }
  } else if (type == "linear" || type == "yarn") {
    scaling.type = type == "linear" ? rope_scaling_type::linear : rope_scaling_type::yarn;
    scaling.factor = fields.number("factor", 1.0f);
    if (!fields.first_error() && !(scaling.factor > 0)) fields.fail("factor", "must be positive");
    if (scaling.type == rope_scaling_type::yarn) {
      scaling.original_max_position = fields.positive_int("original_max_position_embeddings", max_position);
      scaling.beta_fast = fields.number("beta_fast", scaling.beta_fast);
      scaling.beta_slow = fields.number("beta_slow", scaling.beta_slow);
      scaling.attention_factor = yarn_attention_factor(fields, scaling.factor);
      if (fields.boolean("truncate", true) == false) {
        return make_error(errc::unsupported, source + ": rope_scaling 'truncate': false is not supported");
      }
    }
    if (scaling.factor == 1.0f && scaling.attention_factor == 0.0f) scaling = rope_scaling{};
  } else if (type == "longrope" || type == "su") {
    // Phi-3: the original context is a top-level field (or the scaling's own), the factor
    // the ratio of the contexts.
    field_reader top(root, source);
    scaling.type = rope_scaling_type::longrope;
    scaling.original_max_position = fields.positive_int(
        "original_max_position_embeddings", top.positive_int("original_max_position_embeddings", max_position));
    scaling.factor = fields.find("factor") != nullptr ? fields.number("factor", 1.0f)
                                                      : float(max_position) / float(scaling.original_max_position);
    scaling.attention_factor = fields.number("attention_factor", 0.0f);
    for (auto [key, out] : {std::pair{"short_factor", &scaling.short_factor}, std::pair{"long_factor", &scaling.long_factor}}) {
      const json* list = fields.find(key);
      if (list == nullptr || !list->is_array() || list->empty()) {
        fields.fail(key, "must be a list of factors");
        continue;
      }
      for (const auto& x : *list) {
        if (!x.is_number() || !(x.get<double>() > 0)) {
          fields.fail(key, "must hold positive numbers");
          break;
        }
        out->push_back(x.get<float>());
      }
    }
    if (top.first_error()) return std::unexpected(*top.first_error());
  } else if (type && *type != "default") {
    return make_error(errc::unsupported, source + ": rope_scaling type '" + *type +
                                             "' is not supported (llama3, linear, yarn, longrope)");
  }
  if (fields.first_error()) return std::unexpected(*fields.first_error());
  return scaling;
}

/// The experts of a mixture family into config.moe.
result<void> read_experts(field_reader& fields, const model_family& family, model_config& config) {
  if (!family.moe) return {};
  auto& moe = config.moe;
  if (family.name == "mixtral") {
    moe.num_experts = fields.positive_int("num_local_experts");
    moe.expert_hidden_dim = config.hidden_dim;
    moe.normalize_weights = true;  // a softmax over the chosen experts' logits
  } else {
    moe.num_experts = fields.positive_int("num_experts");
    moe.expert_hidden_dim = fields.positive_int("moe_intermediate_size");
    moe.normalize_weights = fields.boolean("norm_topk_prob", false);
    if (fields.positive_int("decoder_sparse_step", 1) != 1) {
      return make_error(errc::unsupported, fields.source() + ": decoder_sparse_step other than 1 (dense layers between "
                                                             "the experts' layers) is not supported");
    }
    if (const json* dense = fields.find("mlp_only_layers"); dense != nullptr && !(dense->is_array() && dense->empty())) {
      return make_error(errc::unsupported, fields.source() + ": mlp_only_layers (dense layers among the experts' "
                                                             "layers) is not supported");
    }
  }
  moe.experts_per_token = fields.positive_int("num_experts_per_tok");
  if (family.shared_expert) moe.shared_hidden_dim = fields.positive_int("shared_expert_intermediate_size");
  if (!fields.first_error() && moe.experts_per_token > moe.num_experts) {
    fields.fail("num_experts_per_tok", "exceeds the number of experts");
  }
  return {};
}

/// The MLP's activation: SiLU, or Gemma's tanh GELU ("gelu_pytorch_tanh"; Gemma 1's
/// configs say "gelu" and mean it too).
result<void> read_activation(field_reader& fields, const model_family& family, model_config& config) {
  auto activation = fields.string("hidden_activation");
  if (!activation) activation = fields.string("hidden_act");
  if (!activation) return {};
  const bool gemma = family.activation == mlp_activation::gelu_tanh;
  if (*activation == "silu" && !gemma) return {};
  if (gemma && (*activation == "gelu_pytorch_tanh" || *activation == "gelu")) return {};
  return make_error(errc::unsupported, fields.source() + ": activation '" + *activation + "' is not supported (" +
                                           to_string(config.activation) + " for " + config.architecture + ")");
}

/// Sliding windows: every layer's (Mistral, Phi-3, Qwen2 with use_sliding_window), or
/// Gemma's interleaved ones (sliding_window_pattern, or layer_types).
result<void> read_window(field_reader& fields, const model_family& family, model_config& config) {
  const bool interleaved = family.window_period > 0;
  bool uses_window = interleaved || config.architecture == "MistralForCausalLM" ||
                     config.architecture == "MixtralForCausalLM" || family.name == "phi3";
  if (fields.boolean("use_sliding_window", false)) {
    // Qwen2: layers from max_window_layers on are windowed.
    const int first = fields.positive_int("max_window_layers", 1 << 30);
    if (first < config.num_layers && first > 0) {
      return make_error(errc::unsupported, fields.source() + ": sliding windows in only some layers (max_window_layers " +
                                               std::to_string(first) + ") are not supported");
    }
    uses_window = first < config.num_layers;
  }
  if (!uses_window || fields.find("sliding_window") == nullptr) {
    config.window_period = 0;
    config.rope_local_theta = 0.0f;
    return {};
  }
  config.sliding_window = fields.positive_int("sliding_window");
  if (!interleaved) return {};
  if (const json* types = fields.find("layer_types"); types != nullptr) {
    // "sliding_attention" / "full_attention" per layer, repeating a period that ends in a full one.
    if (!types->is_array() || int(types->size()) != config.num_layers) {
      fields.fail("layer_types", "must list one type per layer");
      return {};
    }
    int period = 0;
    for (std::size_t i = 0; i < types->size() && period == 0; ++i) {
      if ((*types)[i] == "full_attention") period = int(i) + 1;
    }
    for (std::size_t i = 0; i < types->size(); ++i) {
      const auto& type = (*types)[i];
      if (type != "full_attention" && type != "sliding_attention") {
        return make_error(errc::unsupported, fields.source() + ": layer type " + type.dump() + " is not supported");
      }
      const bool windowed = period == 0 || int(i) % period != period - 1;
      if ((type == "sliding_attention") != windowed) {
        return make_error(errc::unsupported, fields.source() + ": layer_types that do not repeat a period ending in a "
                                                               "full-attention layer are not supported");
      }
    }
    // Every layer windowed: a stated period longer than the model says the same.
    if (period == 0 && fields.find("sliding_window_pattern") != nullptr &&
        fields.positive_int("sliding_window_pattern") > config.num_layers) {
      period = fields.positive_int("sliding_window_pattern");
    }
    config.window_period = period;
  } else {
    config.window_period = fields.positive_int("sliding_window_pattern", family.window_period);
  }
  config.rope_local_theta = fields.number("rope_local_base_freq", family.rope_local_theta);
  return {};
}

/// Gemma's numbers: the attention scale (query_pre_attn_scalar) and soft-caps.
void read_gemma(field_reader& fields, const model_family& family, model_config& config) {
  if (family.activation != mlp_activation::gelu_tanh) return;
  if (fields.find("query_pre_attn_scalar") != nullptr) {
    const float scalar = fields.number("query_pre_attn_scalar", 0.0f);
    if (!(scalar > 0.0f)) {
      fields.fail("query_pre_attn_scalar", "must be positive");
    } else if (scalar != float(config.head_dim)) {
      config.attention_scale = 1.0f / std::sqrt(scalar);
    }
  }
  // Null (Gemma 3) means none.
  config.attn_softcap = fields.find("attn_logit_softcapping") != nullptr ? fields.number("attn_logit_softcapping", 0.0f) : 0.0f;
  config.final_softcap =
      fields.find("final_logit_softcapping") != nullptr ? fields.number("final_logit_softcapping", 0.0f) : 0.0f;
  if (config.attn_softcap < 0.0f || config.final_softcap < 0.0f) fields.fail("logit_softcapping", "must not be negative");
}

// Fields that would change the computation in ways this engine does not implement.
result<void> check_unsupported_features(field_reader& fields, const model_family& family, model_config& config) {
  if (auto ok = read_activation(fields, family, config); !ok) return ok;
  if (fields.boolean("mlp_bias", false)) {
    return make_error(errc::unsupported, fields.source() + ": mlp_bias is not supported");
  }
  return read_window(fields, family, config);
}

}  // namespace

result<model_config> try_parse_hf_config(std::string_view json_text, const std::string& source) {
  if (json_nests_deeper_than(json_text)) {
    return make_error(errc::corrupt_file, source + ": nests deeper than " + std::to_string(max_json_depth) + " levels");
  }
  const json root = json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (root.is_discarded() || !root.is_object()) {
    return make_error(errc::corrupt_file, source + ": not a JSON object");
  }
  auto architecture = read_architecture(root, source);
  if (!architecture) return std::unexpected(architecture.error());
  const model_family& family = *find_hf_family(*architecture);
  if (!family.hf_loadable) {
    return make_error(errc::unsupported, source + ": " + *architecture +
                                             " folders (MXFP4 blocks in safetensors) are not supported; load the "
                                             "model's GGUF file");
  }
  // Gemma 3's multimodal checkpoints: the text decoder's config.json fields are its
  // text_config, over Gemma3TextConfig's defaults (the published ones omit most).
  json text_config;
  const bool multimodal = *architecture == "Gemma3ForConditionalGeneration";
  if (multimodal) {
    text_config = json{{"vocab_size", 262208}, {"num_attention_heads", 8}, {"num_key_value_heads", 4},
                       {"head_dim", 256}, {"hidden_activation", "gelu_pytorch_tanh"},
                       {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000.0},
                       {"query_pre_attn_scalar", 256}, {"sliding_window", 4096}, {"rope_local_base_freq", 10000.0},
                       {"sliding_window_pattern", 6}, {"tie_word_embeddings", true}};
    const auto it = root.find("text_config");
    if (it == root.end() || !it->is_object()) {
      return make_error(errc::corrupt_file, source + ": Gemma3ForConditionalGeneration without a text_config object");
    }
    text_config.update(*it);
  }
  const json& fields_root = multimodal ? text_config : root;

  field_reader fields(fields_root, source);
  model_config config;
  // An alias (Mistral) stays as named; a multimodal checkpoint loads as its text decoder.
  config.architecture = multimodal ? std::string(family.hf_architecture) : *architecture;
  config.dim = fields.positive_int("hidden_size");
  config.hidden_dim = fields.positive_int("intermediate_size");
  config.num_layers = fields.positive_int("num_hidden_layers");
  config.num_heads = fields.positive_int("num_attention_heads");
  config.num_kv_heads = fields.positive_int("num_key_value_heads", config.num_heads);
  const bool divides = config.num_heads > 0 && config.dim % config.num_heads == 0;
  if (fields.find("head_dim") == nullptr && !divides && !fields.first_error()) {
    fields.fail("head_dim", "is missing and hidden_size is not a multiple of num_attention_heads");
  }
  config.head_dim = fields.positive_int("head_dim", divides ? config.dim / config.num_heads : 1);
  config.vocab_size = fields.positive_int("vocab_size");
  config.max_seq_len = fields.positive_int("max_position_embeddings", 2048);
  auto scaling = read_rope_scaling(fields_root, source, config.max_seq_len);
  if (!scaling) return std::unexpected(scaling.error());
  config.norm_eps = fields.number("rms_norm_eps", 1e-6f);
  config.rope_theta = fields.number("rope_theta", 10000.0f);
  config.rope = rope_style::half;
  config.scaling = *scaling;
  apply_layer_kinds(config, family);
  config.tied_embeddings = fields.boolean("tie_word_embeddings", family.scale_embeddings);  // Gemma's default: tied
  // Qwen2 always has q/k/v biases; Llama declares them with attention_bias.
  config.attention_bias = family.attention_bias || fields.boolean("attention_bias", false);
  // Qwen3 normalises each head of q and k (q_norm / k_norm) before RoPE.
  config.qk_norm = family.qk_norm;
  const float rotary = fields.number("partial_rotary_factor", 1.0f);
  if (rotary != 1.0f) {
    const long dims = std::lround(rotary * float(config.head_dim));
    if (!(rotary > 0.0f && rotary < 1.0f) || dims % 2 != 0 || dims == 0) {
      fields.fail("partial_rotary_factor", "must give an even number of rotated dimensions below head_dim");
    } else {
      config.rope_dims = int(dims);
    }
  }
  if (auto ok = read_experts(fields, family, config); !ok) return std::unexpected(ok.error());
  read_gemma(fields, family, config);
  if (auto ok = check_unsupported_features(fields, family, config); !ok) return std::unexpected(ok.error());
  if (fields.first_error()) return std::unexpected(*fields.first_error());
  if (auto ok = try_check_shape(config); !ok) {
    return make_error(ok.error().code, source + ": " + ok.error().message);
  }
  return config;
}

result<model_config> try_load_hf_config(const std::filesystem::path& config_path) {
  auto text = read_text_file(config_path);
  if (!text) return std::unexpected(text.error());
  return try_parse_hf_config(*text, config_path.string());
}

result<void> try_check_shape(const model_config& c) {
  const auto bad = [](const std::string& what) { return make_error(errc::invalid_argument, "invalid model shape: " + what); };
  if (c.dim <= 0 || c.hidden_dim <= 0 || c.num_layers <= 0 || c.vocab_size <= 0 || c.max_seq_len <= 0) {
    return bad("hidden size, intermediate size, layers, vocabulary and context must be positive");
  }
  if (c.num_heads <= 0 || c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads != 0) {
    return bad(std::to_string(c.num_heads) + " attention heads do not divide into " +
               std::to_string(c.num_kv_heads) + " KV heads");
  }
  if (c.head_dim <= 0 || c.head_dim % 2 != 0) {
    return bad("head_dim " + std::to_string(c.head_dim) + " must be positive and even for RoPE");
  }
  // q_dim() and kv_dim() are ints: no real model comes near 2^30.
  if (std::int64_t(c.num_heads) * c.head_dim > (std::int64_t(1) << 30)) {
    return bad(std::to_string(c.num_heads) + " heads of " + std::to_string(c.head_dim) + " values is too wide");
  }
  if (!(c.norm_eps > 0) || !(c.rope_theta > 0)) return bad("rms_norm_eps and rope_theta must be positive");
  if (c.rope_dims < 0 || c.rope_dims > c.head_dim || c.rope_dims % 2 != 0) {
    return bad("rotary dimensions " + std::to_string(c.rope_dims) + " must be even and at most head_dim");
  }
  if (c.scaling.enabled() && !(c.scaling.factor > 0)) return bad("the RoPE scaling factor must be positive");
  if (c.scaling.type == rope_scaling_type::longrope) {
    const auto pairs = std::size_t(c.rotary_dims() / 2);
    if (c.scaling.short_factor.size() != pairs || c.scaling.long_factor.size() != pairs) {
      return bad("LongRoPE needs " + std::to_string(pairs) + " short and long factors (one per rotary pair), not " +
                 std::to_string(c.scaling.short_factor.size()) + " and " + std::to_string(c.scaling.long_factor.size()));
    }
    for (const auto& factors : {c.scaling.short_factor, c.scaling.long_factor}) {
      for (float f : factors) {
        if (!(f > 0.0f) || !std::isfinite(f)) return bad("LongRoPE factors must be positive");
      }
    }
  }
  if (c.moe.enabled()) {
    const auto& m = c.moe;
    if (m.experts_per_token <= 0 || m.experts_per_token > m.num_experts || m.expert_hidden_dim <= 0 ||
        m.shared_hidden_dim < 0 || m.num_experts > 4096) {
      return bad(std::to_string(m.experts_per_token) + " of " + std::to_string(m.num_experts) + " experts of " +
                 std::to_string(m.expert_hidden_dim) + " (1 to 4096 experts, at least one chosen)");
    }
  }
  return {};
}

namespace {

result<std::optional<token_id>> read_token_id(const json& value, const std::string& what, int vocab_size) {
  if (value.is_null()) return std::optional<token_id>{};
  if (!value.is_number_integer() || value.get<std::int64_t>() < 0 || value.get<std::int64_t>() >= vocab_size) {
    return make_error(errc::corrupt_file, what + " must be a token id below the vocabulary size " +
                                              std::to_string(vocab_size) + ", found " + value.dump());
  }
  return std::optional<token_id>(token_id(value.get<std::int64_t>()));
}

}  // namespace

result<generation_ids> try_parse_generation_ids(std::string_view json_text, const std::string& source,
                                                int vocab_size) {
  if (json_nests_deeper_than(json_text)) {
    return make_error(errc::corrupt_file, source + ": nests deeper than " + std::to_string(max_json_depth) + " levels");
  }
  const json root = json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (root.is_discarded() || !root.is_object()) {
    return make_error(errc::corrupt_file, source + ": not a JSON object");
  }
  generation_ids ids;
  if (const auto it = root.find("eos_token_id"); it != root.end()) {
    // A single id or, as Llama 3 writes it, a list of ids.
    const json list = it->is_array() ? *it : json::array({*it});
    for (const auto& item : list) {
      auto id = read_token_id(item, source + ": 'eos_token_id'", vocab_size);
      if (!id) return std::unexpected(id.error());
      if (*id && std::find(ids.eos_ids.begin(), ids.eos_ids.end(), **id) == ids.eos_ids.end()) {
        ids.eos_ids.push_back(**id);
      }
    }
  }
  if (const auto it = root.find("bos_token_id"); it != root.end()) {
    auto id = read_token_id(*it, source + ": 'bos_token_id'", vocab_size);
    if (!id) return std::unexpected(id.error());
    ids.bos_id = *id;
  }
  return ids;
}

namespace {

/// A tensor to load into a vector (norms, biases) or a matrix.
struct tensor_request {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float>* out = nullptr;
  weight_tensor* matrix = nullptr;

  tensor_request(std::string n, std::vector<std::int64_t> s, std::vector<float>* v)
      : name(std::move(n)), shape(std::move(s)), out(v) {}
  tensor_request(std::string n, std::vector<std::int64_t> s, weight_tensor* m)
      : name(std::move(n)), shape(std::move(s)), matrix(m) {}
  /// Experts: one tensor of `shape` per name, stacked into one matrix.
  std::vector<std::string> parts;
  /// A fused matrix (Phi-3's qkv_proj, gate_up_proj): its rows split into these, in order.
  std::vector<std::pair<weight_tensor*, std::int64_t>> splits;
};

/// The experts' tensors `prefix`E`suffix` for every expert E, stacked into `out`.
tensor_request stacked(const std::string& prefix, const std::string& suffix, int num_experts,
                       std::vector<std::int64_t> shape, weight_tensor* out) {
  tensor_request request(prefix + "*" + suffix, std::move(shape), out);
  for (int e = 0; e < num_experts; ++e) request.parts.push_back(prefix + std::to_string(e) + suffix);
  return request;
}

/// A mixture layer's router, experts and shared expert, by the family's names.
void add_experts(std::vector<tensor_request>& list, const model_config& c, const std::string& prefix,
                 layer_weights& layer) {
  const std::int64_t dim = c.dim, ff = c.moe.expert_hidden_dim;
  const int e = c.moe.num_experts;
  if (c.architecture == "MixtralForCausalLM") {
    const std::string moe = prefix + "block_sparse_moe.";
    list.push_back({moe + "gate.weight", {e, dim}, &layer.router});
    list.push_back(stacked(moe + "experts.", ".w1.weight", e, {ff, dim}, &layer.gate_exps));
    list.push_back(stacked(moe + "experts.", ".w3.weight", e, {ff, dim}, &layer.up_exps));
    list.push_back(stacked(moe + "experts.", ".w2.weight", e, {dim, ff}, &layer.down_exps));
    return;
  }
  const std::string mlp = prefix + "mlp.";
  list.push_back({mlp + "gate.weight", {e, dim}, &layer.router});
  list.push_back(stacked(mlp + "experts.", ".gate_proj.weight", e, {ff, dim}, &layer.gate_exps));
  list.push_back(stacked(mlp + "experts.", ".up_proj.weight", e, {ff, dim}, &layer.up_exps));
  list.push_back(stacked(mlp + "experts.", ".down_proj.weight", e, {dim, ff}, &layer.down_exps));
  if (c.moe.shared_hidden_dim > 0) {
    const std::int64_t shared = c.moe.shared_hidden_dim;
    list.push_back({mlp + "shared_expert_gate.weight", {1, dim}, &layer.shared_expert_gate});
    list.push_back({mlp + "shared_expert.gate_proj.weight", {shared, dim}, &layer.w_gate});
    list.push_back({mlp + "shared_expert.up_proj.weight", {shared, dim}, &layer.w_up});
    list.push_back({mlp + "shared_expert.down_proj.weight", {dim, shared}, &layer.w_down});
  }
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Every tensor the config implies, in checkpoint order, with its destination.
std::vector<tensor_request> list_tensors(const model_config& c, model_weights& w, const std::string& model) {
  const std::int64_t dim = c.dim, hidden = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim();
  const bool fused = family_of(c).fused_projections;
  std::vector<tensor_request> list;
  list.push_back({model + "embed_tokens.weight", {c.vocab_size, dim}, &w.token_embedding});
  for (int i = 0; i < c.num_layers; ++i) {
    auto& layer = w.layers[std::size_t(i)];
    const std::string prefix = model + "layers." + std::to_string(i) + ".";
    list.push_back({prefix + "input_layernorm.weight", {dim}, &layer.attn_norm});
    if (fused) {
      tensor_request qkv(prefix + "self_attn.qkv_proj.weight", {q + 2 * kv, dim}, static_cast<weight_tensor*>(nullptr));
      qkv.splits = {{&layer.wq, q}, {&layer.wk, kv}, {&layer.wv, kv}};
      list.push_back(std::move(qkv));
    } else {
      list.push_back({prefix + "self_attn.q_proj.weight", {q, dim}, &layer.wq});
      list.push_back({prefix + "self_attn.k_proj.weight", {kv, dim}, &layer.wk});
      list.push_back({prefix + "self_attn.v_proj.weight", {kv, dim}, &layer.wv});
    }
    if (c.attention_bias) {
      list.push_back({prefix + "self_attn.q_proj.bias", {q}, &layer.bq});
      list.push_back({prefix + "self_attn.k_proj.bias", {kv}, &layer.bk});
      list.push_back({prefix + "self_attn.v_proj.bias", {kv}, &layer.bv});
    }
    if (c.qk_norm) {
      list.push_back({prefix + "self_attn.q_norm.weight", {c.head_dim}, &layer.q_norm});
      list.push_back({prefix + "self_attn.k_norm.weight", {c.head_dim}, &layer.k_norm});
    }
    list.push_back({prefix + "self_attn.o_proj.weight", {dim, q}, &layer.wo});
    if (c.post_norms) {  // Gemma 2 and 3: post_attention_layernorm norms the attention's output
      list.push_back({prefix + "post_attention_layernorm.weight", {dim}, &layer.post_attn_norm});
      list.push_back({prefix + "pre_feedforward_layernorm.weight", {dim}, &layer.ffn_norm});
      list.push_back({prefix + "post_feedforward_layernorm.weight", {dim}, &layer.post_ffn_norm});
    } else {
      list.push_back({prefix + "post_attention_layernorm.weight", {dim}, &layer.ffn_norm});
    }
    if (c.moe.enabled()) {
      add_experts(list, c, prefix, layer);
      continue;
    }
    if (fused) {
      tensor_request gate_up(prefix + "mlp.gate_up_proj.weight", {2 * hidden, dim}, static_cast<weight_tensor*>(nullptr));
      gate_up.splits = {{&layer.w_gate, hidden}, {&layer.w_up, hidden}};
      list.push_back(std::move(gate_up));
    } else {
      list.push_back({prefix + "mlp.gate_proj.weight", {hidden, dim}, &layer.w_gate});
      list.push_back({prefix + "mlp.up_proj.weight", {hidden, dim}, &layer.w_up});
    }
    list.push_back({prefix + "mlp.down_proj.weight", {dim, hidden}, &layer.w_down});
  }
  list.push_back({model + "norm.weight", {dim}, &w.final_norm});
  if (!c.tied_embeddings) list.push_back({"lm_head.weight", {c.vocab_size, dim}, &w.classifier});
  return list;
}

/// One tensor's values as fp32, its name and shape checked.
result<void> read_values(const tensor_store& store, const std::string& name, const std::vector<std::int64_t>& shape,
                         std::span<float> out) {
  const tensor_view* view = store.find(name);
  if (view == nullptr) {
    return make_error(errc::not_found, "model weights lack tensor '" + name + "' (expected shape " +
                                           shape_string(shape) + ")");
  }
  const std::string where = "tensor '" + name + "' in '" + store.file_of(name).string() + "'";
  if (view->shape != shape) {
    return make_error(errc::corrupt_file, where + " has shape " + shape_string(view->shape) + ", expected " +
                                              shape_string(shape));
  }
  if (auto ok = try_convert_to_f32(*view, out); !ok) return make_error(ok.error().code, where + ": " + ok.error().message);
  return {};
}

result<void> load_tensor(const tensor_store& store, const tensor_request& request) {
  std::int64_t count = 1;
  for (const auto n : request.shape) count *= n;
  const std::size_t num_parts = request.parts.empty() ? 1 : request.parts.size();
  std::vector<float> values(std::size_t(count) * num_parts);
  for (std::size_t i = 0; i < num_parts; ++i) {
    const auto& name = request.parts.empty() ? request.name : request.parts[i];
    const std::span<float> out(values.data() + i * std::size_t(count), std::size_t(count));
    if (auto ok = read_values(store, name, request.shape, out); !ok) return ok;
  }
  if (!request.splits.empty()) {
    const std::int64_t cols = request.shape[1];
    auto from = values.begin();
    for (const auto& [matrix, rows] : request.splits) {
      *matrix = weight_tensor::from_f32(std::vector<float>(from, from + rows * cols), rows, cols);
      from += rows * cols;
    }
  } else if (request.matrix != nullptr) {
    *request.matrix = weight_tensor::from_f32(std::move(values), request.shape[0] * std::int64_t(num_parts),
                                              request.shape.size() > 1 ? request.shape[1] : 1);
  } else {
    *request.out = std::move(values);
  }
  return {};
}

}  // namespace

result<model_weights> try_load_hf_weights(const tensor_store& store, const model_config& config) {
  if (auto ok = try_check_shape(config); !ok) return std::unexpected(ok.error());
  model_weights weights;
  weights.config = config;
  weights.layers.resize(std::size_t(config.num_layers));
  // A multimodal checkpoint's language model (Gemma 3's): its text decoder's tensors,
  // under the prefix its transformers version wrote.
  std::string model = "model.";
  for (const char* prefix : {"language_model.model.", "model.language_model."}) {
    if (store.find(std::string(prefix) + "embed_tokens.weight") != nullptr) model = prefix;
  }
  for (const auto& request : list_tensors(config, weights, model)) {
    if (auto ok = load_tensor(store, request); !ok) return std::unexpected(ok.error());
  }
  if (family_of(config).norm_offset) {  // Gemma's checkpoints hold w for a norm of 1 + w
    auto plus_one = [](std::vector<float>& v) {
      for (float& x : v) x += 1.0f;
    };
    for (auto& l : weights.layers) {
      for (auto* v : {&l.attn_norm, &l.ffn_norm, &l.post_attn_norm, &l.post_ffn_norm, &l.q_norm, &l.k_norm}) plus_one(*v);
    }
    plus_one(weights.final_norm);
  }
  return weights;
}

result<hf_model> try_load_hf_model(const std::filesystem::path& folder, file_load load) {
  const auto config_path = folder / "config.json";
  auto config_text = read_text_file(config_path);
  if (!config_text) return std::unexpected(config_text.error());
  auto config = try_parse_hf_config(*config_text, config_path.string());
  if (!config) return std::unexpected(config.error());
  auto ids = try_parse_generation_ids(*config_text, config_path.string(), config->vocab_size);
  if (!ids) return std::unexpected(ids.error());
  const auto generation_path = folder / "generation_config.json";
  if (std::filesystem::exists(generation_path)) {
    auto text = read_text_file(generation_path);
    if (!text) return std::unexpected(text.error());
    auto overrides = try_parse_generation_ids(*text, generation_path.string(), config->vocab_size);
    if (!overrides) return std::unexpected(overrides.error());
    if (!overrides->eos_ids.empty()) ids->eos_ids = overrides->eos_ids;
    if (overrides->bos_id) ids->bos_id = overrides->bos_id;
  }
  auto store = tensor_store::try_open_folder(folder, load);
  if (!store) return std::unexpected(store.error());
  auto weights = try_load_hf_weights(*store, *config);
  if (!weights) return std::unexpected(weights.error());
  auto pooling = try_read_st_pooling(folder);
  if (!pooling) return std::unexpected(pooling.error());
  return hf_model{std::move(*weights), std::move(ids->eos_ids), ids->bos_id, std::move(*pooling)};
}

}  // namespace inflight

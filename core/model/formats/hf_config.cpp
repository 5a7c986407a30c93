// config.json of a Hugging Face folder: the family, the shape and its layer kinds,
// generation ids; the shape checks every loader shares.
#include "core/model/formats/hf_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/base/json_depth.hpp"
#include "core/base/text_file.hpp"
#include "core/model/formats/layer_layout.hpp"
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
    std::vector<bool> windowed;
    for (const auto& type : *types) {
      if (type != "full_attention" && type != "sliding_attention") {
        return make_error(errc::unsupported, fields.source() + ": layer type " + type.dump() + " is not supported");
      }
      windowed.push_back(type == "sliding_attention");
    }
    const auto found = window_period_of(windowed);
    if (!found) {
      return make_error(errc::unsupported, fields.source() + ": layer_types that do not repeat a period ending in a "
                                                             "full-attention layer are not supported");
    }
    int period = *found;
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

}  // namespace inflight

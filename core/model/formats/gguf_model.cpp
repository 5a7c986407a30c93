#include "core/model/formats/gguf_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/model/formats/hf_model.hpp"
#include "core/model/formats/layer_layout.hpp"
#include "core/model/model_family.hpp"
#include "core/model/rope_factors.hpp"

namespace inflight {

namespace {

/// Reads "{arch}.<key>" fields and keeps the first problem, so config reading is a list.
class gguf_fields {
 public:
  gguf_fields(const gguf_file& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

  const gguf_value* find(const std::string& key) const { return file_.find(arch_ + "." + key); }
  bool has_tensor(const std::string& name) const { return file_.find_tensor(name) != nullptr; }

  /// A positive integer; a per-layer array is accepted when all its entries are equal.
  int positive_int(const std::string& key, std::optional<int> fallback = std::nullopt) {
    const gguf_value* value = find(key);
    if (value == nullptr) {
      if (!fallback) fail(errc::corrupt_file, arch_ + "." + key + " is missing");
      return fallback.value_or(0);
    }
    std::optional<std::int64_t> number = value->as_int();
    if (value->is_array() && value->size() > 0) {
      number = value->int_at(0);
      for (std::size_t i = 1; i < value->size(); ++i) {
        if (value->int_at(i) != number) {
          fail(errc::unsupported, arch_ + "." + key + " differs between layers, which is not supported");
        }
      }
    }
    if (!number || *number <= 0 || *number > (std::int64_t(1) << 30)) {
      fail(errc::corrupt_file, arch_ + "." + key + " must be a positive integer");
      return 0;
    }
    return int(*number);
  }

  float number(const std::string& key, float fallback) {
    const gguf_value* value = find(key);
    if (value == nullptr) return fallback;
    const auto x = value->as_float();
    if (!x || !std::isfinite(*x) || std::abs(*x) > double(std::numeric_limits<float>::max())) {
      fail(errc::corrupt_file, arch_ + "." + key + " must be a finite number");
      return fallback;
    }
    return float(*x);
  }

  void fail(errc code, const std::string& what) {
    if (!error_) error_ = error{code, "GGUF file '" + file_.source() + "': " + what};
  }
  const std::optional<error>& first_error() const { return error_; }

 private:
  const gguf_file& file_;
  std::string arch_;
  std::optional<error> error_;
};

result<std::string> read_architecture(const gguf_file& file) {
  const gguf_value* value = file.find("general.architecture");
  const std::string arch(value != nullptr ? value->as_string().value_or("") : std::string_view());
  if (find_gguf_family(arch, false) != nullptr) return arch;
  return make_error(errc::unsupported, "GGUF file '" + file.source() + "': architecture '" +
                                           (arch.empty() ? std::string("(general.architecture missing)") : arch) +
                                           "' is not supported; supported: " +
                                           family_list(&model_family::gguf_architecture));
}

/// The family, telling Mixtral from Llama by its experts.
const model_family& read_family(gguf_fields& fields, const std::string& arch) {
  const gguf_value* experts = fields.find("expert_count");
  const bool has_experts = experts != nullptr && experts->as_int().value_or(0) > 0;
  const model_family* family = find_gguf_family(arch, has_experts);
  if (has_experts && !family->moe) {
    fields.fail(errc::unsupported, "experts (expert_count " + std::to_string(*experts->as_int()) + ") in a '" + arch +
                                       "' file, whose layers are dense");
  }
  return *family;
}

/// {arch}.expert_* into config.moe.
void read_experts(gguf_fields& fields, const model_family& family, model_config& c) {
  if (!family.moe) return;
  c.moe.num_experts = fields.positive_int("expert_count");
  c.moe.experts_per_token = fields.positive_int("expert_used_count");
  // Mixtral's files name the expert size feed_forward_length.
  c.moe.expert_hidden_dim = fields.positive_int("expert_feed_forward_length", c.hidden_dim);
  c.moe.normalize_weights = family.moe_normalize;
  if (const gguf_value* norm = fields.find("expert_weights_norm"); norm != nullptr) {
    c.moe.normalize_weights = norm->as_int().value_or(0) != 0;
  }
  if (const gguf_value* gating = fields.find("expert_gating_func"); gating != nullptr) {
    const auto kind = gating->as_int().value_or(0);  // llama.cpp: 1 softmax, 2 sigmoid
    if (kind == 2) {
      c.moe.gating = moe_gating::sigmoid;
    } else if (kind != 1) {
      fields.fail(errc::unsupported, "expert_gating_func " + std::to_string(kind) + " is not supported (1 softmax, 2 sigmoid)");
    }
  }
  if (family.shared_expert) c.moe.shared_hidden_dim = fields.positive_int("expert_shared_feed_forward_length", c.hidden_dim);
  if (c.moe.experts_per_token > c.moe.num_experts) {
    fields.fail(errc::corrupt_file, "expert_used_count exceeds expert_count");
  }
}

/// rope.dimension_count (partial rotary) and rope.scaling.* (linear, YaRN).
void read_rope(gguf_fields& fields, model_config& c) {
  if (fields.find("rope.dimension_count") != nullptr) {
    const int dims = fields.positive_int("rope.dimension_count");
    if (dims > c.head_dim || dims % 2 != 0) {
      fields.fail(errc::corrupt_file, "rope.dimension_count " + std::to_string(dims) +
                                          " must be even and at most the head size " + std::to_string(c.head_dim));
    } else if (dims < c.head_dim) {
      c.rope_dims = dims;
    }
  }
  const gguf_value* type = fields.find("rope.scaling.type");
  // As llama.cpp reads it: a factor without a type is linear scaling.
  const std::string name(type != nullptr ? type->as_string().value_or("?") : "linear");
  float factor = fields.number("rope.scaling.factor", 0.0f);
  if (factor == 0.0f) factor = fields.number("rope.scale_linear", 0.0f);
  if (name == "none" || (factor == 0.0f || factor == 1.0f)) {
    if (name != "none" && name != "linear" && name != "yarn") {
      fields.fail(errc::unsupported, "rope.scaling.type '" + name + "' is not supported (linear, yarn)");
    }
    return;
  }
  if (!(factor > 0.0f)) {
    fields.fail(errc::corrupt_file, "rope.scaling.factor must be positive");
    return;
  }
  if (name == "linear") {
    c.scaling.type = rope_scaling_type::linear;
  } else if (name == "yarn") {
    c.scaling.type = rope_scaling_type::yarn;
    c.scaling.original_max_position = fields.positive_int("rope.scaling.original_context_length", c.max_seq_len);
    c.scaling.beta_fast = fields.number("rope.scaling.yarn_beta_fast", 32.0f);
    c.scaling.beta_slow = fields.number("rope.scaling.yarn_beta_slow", 1.0f);
    if (fields.find("rope.scaling.yarn_log_multiplier") != nullptr) {
      fields.fail(errc::unsupported, "rope.scaling.yarn_log_multiplier (DeepSeek's YaRN) is not supported");
    }
    if (const float ext = fields.number("rope.scaling.yarn_ext_factor", -1.0f); ext >= 0.0f && ext != 1.0f) {
      fields.fail(errc::unsupported, "rope.scaling.yarn_ext_factor other than 1 is not supported");
    }
  } else {
    fields.fail(errc::unsupported, "rope.scaling.type '" + name + "' is not supported (linear, yarn)");
    return;
  }
  c.scaling.factor = factor;
  if (fields.number("rope.scaling.attn_factor", 1.0f) != 1.0f && !fields.has_tensor("rope_factors_long.weight")) {
    fields.fail(errc::unsupported, "rope.scaling.attn_factor other than 1 is not supported");
  }
}

/// The sliding window: Gemma 2's and 3's interleaved layers (a period, or llama.cpp's
/// per-layer array of flags), or every layer (Mistral, Phi-3); and Gemma's numbers.
void read_window(gguf_fields& fields, const model_family& family, model_config& c) {
  const int gemma2_window = 4096;  // llama.cpp's default for Gemma 2 files that omit it
  if (fields.find("attention.sliding_window") != nullptr) {
    c.sliding_window = fields.positive_int("attention.sliding_window");
  } else if (family.name == "gemma2") {
    c.sliding_window = gemma2_window;
  }
  if (c.sliding_window == 0) {
    c.window_period = 0;
    c.rope_local_theta = 0.0f;
  } else if (const gguf_value* pattern = fields.find("attention.sliding_window_pattern"); pattern != nullptr) {
    if (!pattern->is_array()) {
      c.window_period = int(pattern->as_int().value_or(0));
    } else {
      // Flags per layer (true: windowed) that must repeat a period ending in a global layer.
      std::vector<bool> windowed;
      for (std::size_t i = 0; i < pattern->size(); ++i) windowed.push_back(pattern->int_at(i) != 0);
      const auto period = window_period_of(windowed);
      if (!period) {
        fields.fail(errc::unsupported, "attention.sliding_window_pattern: windowed and global layers that do not "
                                       "repeat a period ending in a global layer are not supported");
      }
      c.window_period = period.value_or(0);
    }
    if (c.window_period < 0) fields.fail(errc::corrupt_file, "attention.sliding_window_pattern must not be negative");
  }
  c.rope_local_theta = c.sliding_window > 0 ? fields.number("rope.freq_base_swa", c.rope_local_theta) : 0.0f;
  c.attn_softcap = fields.number("attn_logit_softcapping", c.attn_softcap);
  c.final_softcap = fields.number("final_logit_softcapping", c.final_softcap);
  if (c.attn_softcap < 0.0f || c.final_softcap < 0.0f) fields.fail(errc::corrupt_file, "soft-caps must not be negative");
  // GGUF does not carry Gemma's query_pre_attn_scalar: like llama.cpp, the 27B shapes
  // (46 layers of Gemma 2, 62 of Gemma 3) scale by dim / heads, the others by head_dim.
  if ((family.name == "gemma2" && c.num_layers == 46) || (family.name == "gemma3" && c.num_layers == 62)) {
    c.attention_scale = 1.0f / std::sqrt(float(c.dim / c.num_heads));
  }
}

/// Features the engine does not compute: refused by name.
void check_unsupported(gguf_fields& fields, const model_config& c) {
  if (fields.find("attention.value_length") != nullptr && fields.positive_int("attention.value_length") != c.head_dim) {
    fields.fail(errc::unsupported, "attention.value_length differs from attention.key_length");
  }
  if (c.moe.enabled() && c.moe.shared_hidden_dim == 0 && fields.find("expert_shared_count") != nullptr &&
      fields.find("expert_shared_count")->as_int().value_or(0) > 0) {
    fields.fail(errc::unsupported, "expert_shared_count without expert_shared_feed_forward_length");
  }
  if (const float scale = fields.number("expert_weights_scale", 0.0f); scale != 0.0f && scale != 1.0f) {
    fields.fail(errc::unsupported, "expert_weights_scale " + std::to_string(scale) + " is not supported");
  }
  if (fields.find("leading_dense_block_count") != nullptr &&
      fields.find("leading_dense_block_count")->as_int().value_or(0) > 0) {
    fields.fail(errc::unsupported, "leading_dense_block_count (dense layers before the experts) is not supported");
  }
}

/// phi3: LongRoPE from rope_factors_long.weight and rope_factors_short.weight, when the
/// file has them (Phi-3-mini-128k, Phi-3.5, Phi-4-mini).
result<void> read_longrope(const gguf_file& file, gguf_fields& fields, model_config& c) {
  const gguf_tensor_info* long_info = file.find_tensor("rope_factors_long.weight");
  const gguf_tensor_info* short_info = file.find_tensor("rope_factors_short.weight");
  if (long_info == nullptr && short_info == nullptr) return {};
  if (long_info == nullptr || short_info == nullptr || c.scaling.enabled()) {
    return make_error(errc::unsupported, "GGUF file '" + file.source() +
                                             "': LongRoPE needs both rope_factors_long and rope_factors_short, and no "
                                             "other rope.scaling");
  }
  auto long_factor = file.try_values_f32(*long_info);
  if (!long_factor) return std::unexpected(long_factor.error());
  auto short_factor = file.try_values_f32(*short_info);
  if (!short_factor) return std::unexpected(short_factor.error());
  c.scaling.type = rope_scaling_type::longrope;
  c.scaling.long_factor = std::move(*long_factor);
  c.scaling.short_factor = std::move(*short_factor);
  c.scaling.original_max_position = fields.positive_int("rope.scaling.original_context_length", c.max_seq_len);
  c.scaling.factor = float(c.max_seq_len) / float(std::max(1, c.scaling.original_max_position));
  // As llama.cpp reads it: cos / sin scaled by attn_factor, 1 when the file does not say
  // (the converters write sqrt(1 + ln(factor) / ln(original))).
  c.scaling.attention_factor = fields.number("rope.scaling.attn_factor", 1.0f);
  if (fields.first_error()) return std::unexpected(*fields.first_error());
  return {};
}

/// llama: Llama-3 scaling from rope_freqs.weight, when the file has it.
result<void> read_rope_factors(const gguf_file& file, gguf_fields& fields, model_config& c) {
  const gguf_tensor_info* info = file.find_tensor("rope_freqs.weight");
  if (info == nullptr) return {};
  if (c.scaling.enabled()) {
    return make_error(errc::unsupported, "GGUF file '" + file.source() + "': rope_freqs.weight beside rope.scaling.type '" +
                                             to_string(c.scaling.type) + "'");
  }
  auto factors = file.try_values_f32(*info);
  if (!factors) return std::unexpected(factors.error());
  const int original = fields.positive_int("rope.scaling.original_context_length", 8192);
  if (fields.first_error()) return std::unexpected(*fields.first_error());
  auto scaling = try_fit_llama3_scaling(*factors, c, original);
  if (!scaling) return make_error(scaling.error().code, "GGUF file '" + file.source() + "': " + scaling.error().message);
  c.scaling = *scaling;
  return {};
}

}  // namespace

result<model_config> try_read_gguf_config(const gguf_file& file, int vocab_size) {
  auto arch = read_architecture(file);
  if (!arch) return std::unexpected(arch.error());
  gguf_fields fields(file, *arch);
  const model_family& family = read_family(fields, *arch);
  model_config c;
  c.architecture = std::string(family.hf_architecture);
  c.dim = fields.positive_int("embedding_length");
  c.hidden_dim = fields.positive_int("feed_forward_length", family.moe ? std::optional<int>(0) : std::nullopt);
  c.num_layers = fields.positive_int("block_count");
  c.num_heads = fields.positive_int("attention.head_count");
  c.num_kv_heads = fields.positive_int("attention.head_count_kv", c.num_heads);
  const bool divides = c.num_heads > 0 && c.dim % c.num_heads == 0;
  c.head_dim = fields.positive_int("attention.key_length", divides ? std::optional<int>(c.dim / c.num_heads) : std::nullopt);
  c.vocab_size = vocab_size;
  c.max_seq_len = fields.positive_int("context_length");
  c.norm_eps = fields.number("attention.layer_norm_rms_epsilon", 1e-5f);
  c.rope_theta = fields.number("rope.freq_base", 10000.0f);
  c.rope = family.gguf_rope;
  c.tied_embeddings = file.find_tensor("output.weight") == nullptr;
  c.attention_bias = family.attention_bias || file.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.qk_norm = family.qk_norm;
  apply_layer_kinds(c, family);
  read_experts(fields, family, c);
  if (c.moe.enabled() && c.hidden_dim == 0) c.hidden_dim = c.moe.expert_hidden_dim;
  read_window(fields, family, c);
  read_rope(fields, c);
  check_unsupported(fields, c);
  if (fields.first_error()) return std::unexpected(*fields.first_error());
  if (family.gguf_architecture == "llama") {
    if (auto ok = read_rope_factors(file, fields, c); !ok) return std::unexpected(ok.error());
  }
  if (family.name == "phi3") {
    if (auto ok = read_longrope(file, fields, c); !ok) return std::unexpected(ok.error());
  }
  if (auto ok = try_check_shape(c); !ok) return make_error(ok.error().code, "GGUF file '" + file.source() + "': " + ok.error().message);
  return c;
}

result<model_pooling> try_read_gguf_pooling(const gguf_file& file, const std::string& architecture) {
  const std::string key = architecture + ".pooling_type";
  const gguf_value* value = file.find(key);
  if (value == nullptr) return model_pooling{};
  const auto type = value->as_int();
  if (!type) return make_error(errc::corrupt_file, "GGUF file '" + file.source() + "': " + key + " must be an integer");
  return gguf_pooling(*type, key);
}

result<gguf_model> try_load_gguf_model(const std::filesystem::path& path, file_load load) {
  auto file = gguf_file::try_open_all_parts(path, load);  // a split file: all its parts
  if (!file) return std::unexpected(file.error());
  auto arch = read_architecture(*file);
  if (!arch) return std::unexpected(arch.error());
  auto vocab = try_read_gguf_vocab(*file);
  if (!vocab) return std::unexpected(vocab.error());
  auto config = try_read_gguf_config(*file, vocab->num_tokens());
  if (!config) return std::unexpected(config.error());
  auto weights = try_load_gguf_weights(*file, *config);
  if (!weights) return std::unexpected(weights.error());
  auto tok = try_make_gguf_tokenizer(*vocab);
  if (!tok) return make_error(tok.error().code, "GGUF file '" + file->source() + "': " + tok.error().message);
  auto pooling = try_read_gguf_pooling(*file, *arch);
  if (!pooling) return std::unexpected(pooling.error());
  gguf_model m{std::move(*weights), std::move(*vocab), std::move(*tok), std::move(*arch), {}, std::move(*pooling)};
  if (const gguf_value* name = file->find("general.name"); name != nullptr) m.name = std::string(name->as_string().value_or(""));
  return m;
}

}  // namespace inflight

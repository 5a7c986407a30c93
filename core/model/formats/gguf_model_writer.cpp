#include "core/model/formats/gguf_model_writer.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <initializer_list>
#include <tuple>
#include <utility>

#include "core/model/formats/layer_layout.hpp"
#include "core/model/gguf/gguf_writer.hpp"
#include "core/model/model_family.hpp"
#include "core/model/rope_factors.hpp"

namespace inflight {

namespace {

/// New row r of a [num_heads * head_dim] projection is old row order[r]. Interleaved
/// pairs (2i, 2i+1) and half pairs (i, i + head_dim/2) are the same pairs, rows moved.
/// Only the first `rotary_dims` rows of a head rotate; the rest stay where they are.
std::vector<std::int64_t> head_row_order(int num_heads, int head_dim, int rotary_dims, rope_style to) {
  std::vector<std::int64_t> order(std::size_t(num_heads) * head_dim);
  for (std::size_t r = 0; r < order.size(); ++r) order[r] = std::int64_t(r);
  const int half = rotary_dims / 2;
  for (int h = 0; h < num_heads; ++h) {
    for (int i = 0; i < half; ++i) {
      for (int j = 0; j < 2; ++j) {
        const std::int64_t interleaved = std::int64_t(h) * head_dim + 2 * i + j;
        const std::int64_t halved = std::int64_t(h) * head_dim + i + j * half;
        order[std::size_t(to == rope_style::interleaved ? interleaved : halved)] =
            to == rope_style::interleaved ? halved : interleaved;
      }
    }
  }
  return order;
}

std::unexpected<error> row_order_mismatch(std::size_t num_order_rows, std::int64_t num_rows) {
  return make_error(errc::internal, "GGUF writer: a RoPE row order of " + std::to_string(num_order_rows) +
                                        " rows for a tensor of " + std::to_string(num_rows));
}

/// An order built for another head count than the tensor's is refused: its rows would
/// be read and written past the tensor's end.
result<weight_tensor> try_reorder_rows(const weight_tensor& t, const std::vector<std::int64_t>& order) {
  if (std::int64_t(order.size()) != t.rows()) return row_order_mismatch(order.size(), t.rows());
  const auto row_bytes = std::size_t(t.row_bytes());
  std::vector<std::byte> bytes(t.bytes().size());
  for (std::size_t r = 0; r < order.size(); ++r) std::memcpy(bytes.data() + r * row_bytes, t.row(order[r]).data(), row_bytes);
  return weight_tensor::from_bytes(t.dtype(), t.rows(), t.cols(), std::move(bytes));
}

result<std::vector<float>> try_reorder(const std::vector<float>& values, const std::vector<std::int64_t>& order) {
  if (values.empty()) return values;
  if (order.size() != values.size()) return row_order_mismatch(order.size(), std::int64_t(values.size()));
  std::vector<float> out(values.size());
  for (std::size_t r = 0; r < order.size(); ++r) out[r] = values[std::size_t(order[r])];
  return out;
}

/// The layer with its Q/K rows in `to`'s order.
result<layer_weights> try_with_rope_order(const layer_weights& l, const model_config& c, rope_style to) {
  layer_weights out = l;
  const int rotary = c.rotary_dims();
  const auto q_order = head_row_order(c.num_heads, c.head_dim, rotary, to);
  const auto k_order = head_row_order(c.num_kv_heads, c.head_dim, rotary, to);
  const auto norm_order = head_row_order(1, c.head_dim, rotary, to);
  for (auto [matrix, order] : {std::pair{&out.wq, &q_order}, std::pair{&out.wk, &k_order}}) {
    auto moved = try_reorder_rows(*matrix, *order);
    if (!moved) return std::unexpected(moved.error());
    *matrix = std::move(*moved);
  }
  for (auto [values, order] : {std::pair{&out.bq, &q_order}, std::pair{&out.bk, &k_order},
                               std::pair{&out.q_norm, &norm_order}, std::pair{&out.k_norm, &norm_order}}) {
    auto moved = try_reorder(*values, *order);
    if (!moved) return std::unexpected(moved.error());
    *values = std::move(*moved);
  }
  return out;
}

/// llama.cpp's general.file_type for the type most layer matrices have (display only).
std::uint32_t file_type_of(const model_weights& w) {
  std::array<int, num_weight_dtypes> counts{};
  for (const auto& l : w.layers) {
    for (const auto* m : matrices_of(l)) {
      if (!m->empty()) ++counts[std::size_t(m->dtype())];
    }
  }
  const auto most = weight_dtype(std::max_element(counts.begin(), counts.end()) - counts.begin());
  // LLAMA_FTYPE_MOSTLY_* in weight_dtype's order (q4_k, q5_k: their _M mixes; q3_k: Q3_K_S;
  // mxfp4: MXFP4_MOE).
  constexpr std::array<std::uint32_t, num_weight_dtypes> ftypes{0, 1, 32, 7, 2, 15, 17, 18, 8, 3, 9, 25, 30, 10, 11, 38};
  return ftypes[std::size_t(most)];
}

void write_config(gguf_writer& w, const model_weights& weights, const std::string& arch) {
  const model_config& c = weights.config;
  const auto key = [&](const char* k) { return arch + "." + k; };
  w.set_u32(key("context_length"), std::uint32_t(c.max_seq_len));
  w.set_u32(key("embedding_length"), std::uint32_t(c.dim));
  w.set_u32(key("block_count"), std::uint32_t(c.num_layers));
  w.set_u32(key("feed_forward_length"), std::uint32_t(c.hidden_dim));
  w.set_u32(key("attention.head_count"), std::uint32_t(c.num_heads));
  w.set_u32(key("attention.head_count_kv"), std::uint32_t(c.num_kv_heads));
  w.set_u32(key("attention.key_length"), std::uint32_t(c.head_dim));
  w.set_u32(key("attention.value_length"), std::uint32_t(c.head_dim));
  w.set_f32(key("attention.layer_norm_rms_epsilon"), c.norm_eps);
  w.set_f32(key("rope.freq_base"), c.rope_theta);
  w.set_u32(key("rope.dimension_count"), std::uint32_t(c.rotary_dims()));
  w.set_u32(key("vocab_size"), std::uint32_t(c.vocab_size));
  if (c.scaling.enabled()) w.set_u32(key("rope.scaling.original_context_length"), std::uint32_t(c.scaling.original_max_position));
  if (c.scaling.type == rope_scaling_type::linear || c.scaling.type == rope_scaling_type::yarn) {
    w.set_string(key("rope.scaling.type"), to_string(c.scaling.type));
    w.set_f32(key("rope.scaling.factor"), c.scaling.factor);
  }
  if (c.scaling.type == rope_scaling_type::longrope) {  // the scale in use, as llama.cpp's converter writes it
    w.set_f32(key("rope.scaling.attn_factor"), c.scaling.cos_sin_scale());
  }
  if (c.scaling.type == rope_scaling_type::yarn) {
    w.set_f32(key("rope.scaling.yarn_beta_fast"), c.scaling.beta_fast);
    w.set_f32(key("rope.scaling.yarn_beta_slow"), c.scaling.beta_slow);
  }
  if (c.moe.enabled()) {
    w.set_u32(key("expert_count"), std::uint32_t(c.moe.num_experts));
    w.set_u32(key("expert_used_count"), std::uint32_t(c.moe.experts_per_token));
    w.set_u32(key("expert_feed_forward_length"), std::uint32_t(c.moe.expert_hidden_dim));
    if (c.moe.shared_hidden_dim > 0) {
      w.set_u32(key("expert_shared_feed_forward_length"), std::uint32_t(c.moe.shared_hidden_dim));
    }
  }
  if (c.sliding_window > 0) {
    w.set_u32(key("attention.sliding_window"), std::uint32_t(c.sliding_window));
    if (c.window_period > 0) w.set_u32(key("attention.sliding_window_pattern"), std::uint32_t(c.window_period));
    if (c.rope_local_theta > 0.0f) w.set_f32(key("rope.freq_base_swa"), c.rope_local_theta);
  }
  if (c.attn_softcap > 0.0f) w.set_f32(key("attn_logit_softcapping"), c.attn_softcap);
  if (c.final_softcap > 0.0f) w.set_f32(key("final_logit_softcapping"), c.final_softcap);
  w.set_u32("general.file_type", file_type_of(weights));
}

/// The rows of `parts` one after another (Phi-3's fused matrices); one type and width.
result<weight_tensor> try_concat_rows(std::initializer_list<const weight_tensor*> parts) {
  const weight_tensor& first = **parts.begin();
  std::vector<std::byte> bytes;
  std::int64_t rows = 0;
  for (const weight_tensor* t : parts) {
    if (t->dtype() != first.dtype() || t->cols() != first.cols()) {
      return make_error(errc::unsupported, "GGUF writer: a fused matrix's parts differ in type or width");
    }
    bytes.insert(bytes.end(), t->bytes().begin(), t->bytes().end());
    rows += t->rows();
  }
  return weight_tensor::from_bytes(first.dtype(), rows, first.cols(), std::move(bytes));
}

/// Phi-3's layer matrices as its files hold them: attn_qkv, and ffn_up of gate's rows then up's.
result<void> add_fused(gguf_writer& w, const layer_weights& l, const std::string& p) {
  auto qkv = try_concat_rows({&l.wq, &l.wk, &l.wv});
  if (!qkv) return std::unexpected(qkv.error());
  auto gate_up = try_concat_rows({&l.w_gate, &l.w_up});
  if (!gate_up) return std::unexpected(gate_up.error());
  const std::pair<const char*, const weight_tensor*> matrices[] = {
      {"attn_qkv.weight", &*qkv}, {"attn_output.weight", &l.wo}, {"ffn_up.weight", &*gate_up}, {"ffn_down.weight", &l.w_down}};
  for (const auto& [name, matrix] : matrices) {
    if (auto ok = w.try_add_matrix(p + name, *matrix); !ok) return ok;
  }
  return {};
}

/// A mixture's router, stacked experts and shared expert, by llama.cpp's names.
result<void> add_experts(gguf_writer& w, const layer_weights& l, const std::string& p, const model_config& c) {
  if (auto ok = w.try_add_matrix(p + "ffn_gate_inp.weight", l.router); !ok) return ok;
  const std::pair<const char*, const weight_tensor*> stacked[] = {
      {"ffn_gate_exps.weight", &l.gate_exps}, {"ffn_up_exps.weight", &l.up_exps}, {"ffn_down_exps.weight", &l.down_exps}};
  for (const auto& [name, matrix] : stacked) {
    if (auto ok = w.try_add_stacked(p + name, *matrix, c.moe.num_experts); !ok) return ok;
  }
  if (c.expert_biases) {  // gpt-oss: [experts x rows] each, as llama.cpp reads them
    const std::int64_t e = c.moe.num_experts, ff = c.moe.expert_hidden_dim;
    if (auto ok = w.try_add_vector(p + "ffn_gate_inp.bias", l.router_bias); !ok) return ok;
    const std::tuple<const char*, const std::vector<float>*, std::int64_t> biases[] = {
        {"ffn_gate_exps.bias", &l.gate_exps_bias, ff}, {"ffn_up_exps.bias", &l.up_exps_bias, ff},
        {"ffn_down_exps.bias", &l.down_exps_bias, c.dim}};
    for (const auto& [name, values, rows] : biases) {
      auto matrix = weight_tensor::from_f32(*values, e, rows);
      if (matrix.empty()) return make_error(errc::invalid_argument, std::string("GGUF writer: ") + name + " has the wrong size");
      if (auto ok = w.try_add_matrix(p + name, matrix); !ok) return ok;
    }
  }
  if (l.w_gate.empty()) return {};
  if (!l.shared_expert_gate.empty()) {
    if (auto ok = w.try_add_vector(p + "ffn_gate_inp_shexp.weight", l.shared_expert_gate); !ok) return ok;
  }
  const std::pair<const char*, const weight_tensor*> shared[] = {
      {"ffn_gate_shexp.weight", &l.w_gate}, {"ffn_up_shexp.weight", &l.w_up}, {"ffn_down_shexp.weight", &l.w_down}};
  for (const auto& [name, matrix] : shared) {
    if (auto ok = w.try_add_matrix(p + name, *matrix); !ok) return ok;
  }
  return {};
}

result<void> add_layer(gguf_writer& w, const layer_weights& l, int i, const model_config& c) {
  const std::string p = "blk." + std::to_string(i) + ".";
  const std::pair<const char*, const std::vector<float>*> vectors[] = {
      {"attn_norm.weight", &l.attn_norm}, {"attn_q.bias", &l.bq},        {"attn_k.bias", &l.bk},
      {"attn_v.bias", &l.bv},             {"attn_q_norm.weight", &l.q_norm}, {"attn_k_norm.weight", &l.k_norm},
      {gguf_ffn_norm_name(c), &l.ffn_norm},
      {"post_attention_norm.weight", &l.post_attn_norm},
      {"post_ffw_norm.weight", &l.post_ffn_norm}, {"attn_output.bias", &l.bo}, {"attn_sinks.weight", &l.attn_sinks}};
  for (const auto& [name, values] : vectors) {
    if (values->empty()) continue;
    if (auto ok = w.try_add_vector(p + name, *values); !ok) return ok;
  }
  if (family_of(c).fused_projections) return add_fused(w, l, p);
  const std::pair<const char*, const weight_tensor*> matrices[] = {
      {"attn_q.weight", &l.wq},        {"attn_k.weight", &l.wk},     {"attn_v.weight", &l.wv},
      {"attn_output.weight", &l.wo},   {"ffn_gate.weight", &l.w_gate}, {"ffn_up.weight", &l.w_up},
      {"ffn_down.weight", &l.w_down}};
  for (const auto& [name, matrix] : matrices) {
    if (c.moe.enabled() && (matrix == &l.w_gate || matrix == &l.w_up || matrix == &l.w_down)) continue;
    if (auto ok = w.try_add_matrix(p + name, *matrix); !ok) return ok;
  }
  if (c.moe.enabled()) return add_experts(w, l, p, c);
  return {};
}

}  // namespace

result<std::string> try_gguf_architecture_of(const model_config& c) {
  const model_family& family = family_of(c);
  if (c.attention_scale != 0.0f &&
      !((family.name == "gemma2" && c.num_layers == 46) || (family.name == "gemma3" && c.num_layers == 62))) {
    return make_error(errc::unsupported, "GGUF writer: GGUF files do not carry an attention scale (query_pre_attn_scalar) "
                                         "other than 1 / sqrt(head_dim)");
  }
  if (family.sinks_and_biases) {
    if (!c.moe.enabled() || !c.attention_bias || !c.attention_sinks || !c.output_bias || !c.expert_biases || c.qk_norm) {
      return make_error(errc::unsupported, "GGUF writer: a gpt-oss model has experts, q/k/v/o biases, sinks and "
                                           "biased experts, and no q/k norms");
    }
    return std::string(family.gguf_architecture);
  }
  if (family.activation != mlp_activation::silu || family.fused_projections) {
    if (c.moe.enabled() || c.attention_bias || c.qk_norm != family.qk_norm) {
      return make_error(errc::unsupported, "GGUF writer: a " + c.architecture + " model has " +
                                               (family.qk_norm ? "" : "no ") + "q/k norms, no biases and no experts");
    }
    return std::string(family.gguf_architecture);
  }
  if (family.moe) {
    if (!c.moe.enabled() || c.qk_norm != family.qk_norm || c.attention_bias != family.attention_bias) {
      return make_error(errc::unsupported, "GGUF writer: a " + c.architecture + " model needs experts, " +
                                               (family.qk_norm ? "" : "no ") + "q/k norms and " +
                                               (family.attention_bias ? "" : "no ") + "q/k/v biases");
    }
  } else if (c.moe.enabled()) {
    return make_error(errc::unsupported, "GGUF writer: experts are written for a mixture family (" +
                                             c.architecture + " has none)");
  } else if (c.qk_norm && c.attention_bias) {
    return make_error(errc::unsupported, "GGUF writer: no architecture has both q/k/v biases and q/k norms");
  }
  const std::string arch = family.moe ? std::string(family.gguf_architecture)
                                      : (c.qk_norm ? "qwen3" : c.attention_bias ? "qwen2" : "llama");
  if (c.scaling.type == rope_scaling_type::longrope && arch != "phi3") {
    return make_error(errc::unsupported, "GGUF writer: LongRoPE scaling is only written for the phi3 architecture");
  }
  if (c.scaling.type == rope_scaling_type::llama3 && arch != "llama") {
    return make_error(errc::unsupported, "GGUF writer: Llama-3 RoPE scaling is only written for the llama architecture");
  }
  return arch;
}

result<void> try_write_gguf_model(const model_weights& weights, const gguf_vocab& vocab,
                                  const std::filesystem::path& path, const gguf_model_options& options) {
  const model_config& c = weights.config;
  auto arch = try_gguf_architecture_of(c);
  if (!arch) return std::unexpected(arch.error());
  if (vocab.num_tokens() != c.vocab_size) {
    return make_error(errc::invalid_argument, "GGUF writer: the tokenizer has " + std::to_string(vocab.num_tokens()) +
                                                  " tokens but the model's vocab_size is " + std::to_string(c.vocab_size));
  }
  gguf_writer w(options.alignment);
  w.set_string("general.architecture", *arch);
  if (!options.name.empty()) w.set_string("general.name", options.name);
  write_config(w, weights, *arch);
  if (options.pooling_type) w.set_u32(*arch + ".pooling_type", *options.pooling_type);
  write_gguf_vocab(w, vocab);
  if (c.scaling.type == rope_scaling_type::llama3) {
    if (auto ok = w.try_add_vector("rope_freqs.weight", llama3_rope_factors(c)); !ok) return ok;
  }
  if (c.scaling.type == rope_scaling_type::longrope) {
    if (auto ok = w.try_add_vector("rope_factors_long.weight", c.scaling.long_factor); !ok) return ok;
    if (auto ok = w.try_add_vector("rope_factors_short.weight", c.scaling.short_factor); !ok) return ok;
  }
  if (auto ok = w.try_add_matrix("token_embd.weight", weights.token_embedding); !ok) return ok;
  if (auto ok = w.try_add_vector("output_norm.weight", weights.final_norm); !ok) return ok;
  if (!weights.classifier.empty()) {
    if (auto ok = w.try_add_matrix("output.weight", weights.classifier); !ok) return ok;
  }
  const rope_style wanted = *arch == "llama" ? rope_style::interleaved : rope_style::half;  // as llama.cpp reads each
  for (int i = 0; i < c.num_layers; ++i) {
    const auto& layer = weights.layers[std::size_t(i)];
    if (c.rope == wanted) {
      if (auto ok = add_layer(w, layer, i, c); !ok) return ok;
      continue;
    }
    auto moved = try_with_rope_order(layer, c, wanted);
    if (!moved) return std::unexpected(moved.error());
    if (auto ok = add_layer(w, *moved, i, c); !ok) return ok;
  }
  if (options.split_max_tensors == 0) return w.try_write(path);
  auto stem = path.string();
  if (stem.ends_with(".gguf")) stem.resize(stem.size() - 5);
  auto parts = w.try_write_split(stem, options.split_max_tensors);
  if (!parts) return std::unexpected(parts.error());
  return {};
}

}  // namespace inflight

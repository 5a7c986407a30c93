#include "core/model/formats/llama2c.hpp"

#include <array>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

namespace inflight {
namespace {

constexpr std::int64_t header_bytes = 7 * sizeof(std::int32_t);

std::int64_t num_weight_floats(const model_config& c) {
  const std::int64_t d = c.dim, h = c.hidden_dim, l = c.num_layers, kv = c.kv_dim();
  const std::int64_t freq = std::int64_t(c.max_seq_len) * c.head_dim;  // real + imag halves
  std::int64_t n = std::int64_t(c.vocab_size) * d + l * (2 * d + 2 * d * d + 2 * d * kv + 3 * d * h) + d + freq;
  if (!c.tied_embeddings) n += std::int64_t(c.vocab_size) * d;
  return n;
}

result<model_config> parse_header(const std::array<std::int32_t, 7>& h, const std::string& name) {
  if (static_cast<std::uint32_t>(h[0]) == 0x616b3432u) {
    return make_error(errc::unsupported, name + ": llama2.c export version 1+ (magic 'ak42') is not supported; "
                                                "export with the legacy layout (version 0)");
  }
  model_config c;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.num_layers = h[2];
  c.num_heads = h[3];
  c.num_kv_heads = h[4];
  c.tied_embeddings = h[5] > 0;
  c.vocab_size = h[5] == std::numeric_limits<std::int32_t>::min() ? 0 : std::abs(h[5]);
  c.max_seq_len = h[6];
  constexpr int limit = 1 << 20;
  auto in_range = [](int v) { return v > 0 && v <= limit; };
  if (!in_range(c.dim) || !in_range(c.hidden_dim) || !in_range(c.num_layers) || !in_range(c.num_heads) ||
      !in_range(c.num_kv_heads) || !in_range(c.vocab_size) || !in_range(c.max_seq_len)) {
    return make_error(errc::corrupt_file, name + ": header values out of range (not a llama2.c checkpoint?)");
  }
  if (c.dim % c.num_heads != 0 || c.num_heads % c.num_kv_heads != 0 || (c.dim / c.num_heads) % 2 != 0) {
    return make_error(errc::corrupt_file, name + ": inconsistent header: dim " + std::to_string(c.dim) + ", heads " +
                                              std::to_string(c.num_heads) + ", kv heads " +
                                              std::to_string(c.num_kv_heads));
  }
  c.head_dim = c.dim / c.num_heads;
  // Each value is at most 2^20, so the float count fits in int64 but its bytes may not.
  if (num_weight_floats(c) > (std::numeric_limits<std::int64_t>::max() - header_bytes) / std::int64_t(sizeof(float))) {
    return make_error(errc::corrupt_file, name + ": header values describe more than 2^63 bytes of weights (dim " +
                                              std::to_string(c.dim) + ", " + std::to_string(c.num_layers) +
                                              " layers, hidden " + std::to_string(c.hidden_dim) + ")");
  }
  c.rope = rope_style::interleaved;
  c.architecture = "llama2.c";
  return c;
}

/// Reads `count` floats into `out`; the caller has checked the file size.
bool read_floats(std::ifstream& in, std::vector<float>& out, std::int64_t count) {
  out.resize(static_cast<std::size_t>(count));
  in.read(reinterpret_cast<char*>(out.data()), count * std::int64_t(sizeof(float)));
  return bool(in);
}

/// Reads a [rows x cols] fp32 matrix.
bool read_matrix(std::ifstream& in, weight_tensor& out, std::int64_t rows, std::int64_t cols) {
  std::vector<float> values;
  if (!read_floats(in, values, rows * cols)) return false;
  out = weight_tensor::from_f32(std::move(values), rows, cols);
  return true;
}

/// Reads each layer's [rows x cols] matrix of a [L x rows x cols] tensor.
bool read_layers(std::ifstream& in, model_weights& w, weight_tensor layer_weights::*member, std::int64_t rows,
                 std::int64_t cols) {
  for (auto& layer : w.layers) {
    if (!read_matrix(in, layer.*member, rows, cols)) return false;
  }
  return true;
}

/// Reads per-layer slices of a [L x rows] tensor into each layer's member.
bool read_layers(std::ifstream& in, model_weights& w, std::vector<float> layer_weights::*member, std::int64_t count) {
  for (auto& layer : w.layers) {
    if (!read_floats(in, layer.*member, count)) return false;
  }
  return true;
}

}  // namespace

std::int64_t llama2c_file_size(const model_config& config) {
  return header_bytes + num_weight_floats(config) * std::int64_t(sizeof(float));
}

result<model_weights> load_llama2c(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::error_code ec;
  const auto file_size = std::filesystem::file_size(path, ec);
  if (ec) return make_error(errc::io_error, name + ": cannot open checkpoint: " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(errc::io_error, name + ": cannot open checkpoint");
  if (file_size < std::uintmax_t(header_bytes)) {
    return make_error(errc::corrupt_file, name + ": " + std::to_string(file_size) + " bytes is too short for a header");
  }
  std::array<std::int32_t, 7> header{};
  in.read(reinterpret_cast<char*>(header.data()), header_bytes);
  auto config = parse_header(header, name);
  if (!config) return std::unexpected(config.error());
  const auto expected = llama2c_file_size(*config);
  if (std::int64_t(file_size) != expected) {
    return make_error(errc::corrupt_file, name + ": size " + std::to_string(file_size) + " bytes, but the header (dim " +
                                              std::to_string(config->dim) + ", " + std::to_string(config->num_layers) +
                                              " layers, vocab " + std::to_string(config->vocab_size) + ") needs " +
                                              std::to_string(expected) + " bytes: truncated or corrupt");
  }

  model_weights w;
  w.config = *config;
  const auto& c = w.config;
  const std::int64_t d = c.dim, h = c.hidden_dim, kv = c.kv_dim();
  w.layers.resize(c.num_layers);
  bool ok = read_matrix(in, w.token_embedding, c.vocab_size, d) && read_layers(in, w, &layer_weights::attn_norm, d) &&
            read_layers(in, w, &layer_weights::wq, d, d) && read_layers(in, w, &layer_weights::wk, kv, d) &&
            read_layers(in, w, &layer_weights::wv, kv, d) && read_layers(in, w, &layer_weights::wo, d, d) &&
            read_layers(in, w, &layer_weights::ffn_norm, d) && read_layers(in, w, &layer_weights::w_gate, h, d) &&
            read_layers(in, w, &layer_weights::w_down, d, h) && read_layers(in, w, &layer_weights::w_up, h, d) &&
            read_floats(in, w.final_norm, d);
  if (ok) in.seekg(std::int64_t(c.max_seq_len) * c.head_dim * std::int64_t(sizeof(float)), std::ios::cur);
  if (ok && !c.tied_embeddings) ok = read_matrix(in, w.classifier, c.vocab_size, d);
  if (!ok) return make_error(errc::io_error, name + ": read failed");
  return w;
}

namespace {

void write_floats(std::ofstream& out, const std::vector<float>& v) {
  out.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
}

void write_layers(std::ofstream& out, const model_weights& w, std::vector<float> layer_weights::*member) {
  for (const auto& layer : w.layers) write_floats(out, layer.*member);
}

/// Writes a matrix as fp32 (decoding other types); false when it cannot be decoded.
bool write_matrix(std::ofstream& out, const weight_tensor& m) {
  if (m.dtype() == weight_dtype::f32) {
    out.write(reinterpret_cast<const char*>(m.bytes().data()), std::streamsize(m.bytes().size()));
    return true;
  }
  auto values = try_to_f32(m);
  if (values) write_floats(out, *values);
  return values.has_value();
}

bool write_layers(std::ofstream& out, const model_weights& w, weight_tensor layer_weights::*member) {
  bool ok = true;
  for (const auto& layer : w.layers) ok = ok && write_matrix(out, layer.*member);
  return ok;
}

}  // namespace

result<void> write_llama2c(const model_weights& w, const std::filesystem::path& path) {
  const auto& c = w.config;
  if (c.rope != rope_style::interleaved || c.dim != c.num_heads * c.head_dim || c.attention_bias ||
      c.scaling.enabled() || c.qk_norm || c.rope_dims != 0 || c.moe.enabled()) {
    return make_error(errc::unsupported, "llama2.c checkpoints hold only dense interleaved-RoPE models without biases, "
                                         "q/k norms, partial rotary or rope scaling, with dim == heads x head_dim");
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return make_error(errc::io_error, path.string() + ": cannot create");
  const std::array<std::int32_t, 7> header{c.dim, c.hidden_dim, c.num_layers, c.num_heads, c.num_kv_heads,
                                           c.tied_embeddings ? c.vocab_size : -c.vocab_size, c.max_seq_len};
  out.write(reinterpret_cast<const char*>(header.data()), header_bytes);
  bool is_decoded = write_matrix(out, w.token_embedding);
  write_layers(out, w, &layer_weights::attn_norm);
  for (auto member : {&layer_weights::wq, &layer_weights::wk, &layer_weights::wv, &layer_weights::wo}) {
    is_decoded = is_decoded && write_layers(out, w, member);
  }
  write_layers(out, w, &layer_weights::ffn_norm);
  for (auto member : {&layer_weights::w_gate, &layer_weights::w_down, &layer_weights::w_up}) {
    is_decoded = is_decoded && write_layers(out, w, member);
  }
  write_floats(out, w.final_norm);
  // freq_cis tables: run.c skips them, but the layout needs the bytes.
  const std::vector<float> freq(std::size_t(c.max_seq_len) * c.head_dim, 0.0f);
  write_floats(out, freq);
  if (!c.tied_embeddings) is_decoded = is_decoded && write_matrix(out, w.classifier);
  if (!is_decoded) return make_error(errc::unsupported, path.string() + ": cannot decode the weights' type to fp32");
  if (!out) return make_error(errc::io_error, path.string() + ": write failed");
  return {};
}

}  // namespace inflight

#include "core/model/convert.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <new>
#include <thread>
#include <vector>

#include "core/model/quant/quantize.hpp"

namespace inflight {
namespace {

/// llama.cpp's rule for the layers whose wv and w_down get more bits in the _M mixes.
bool uses_more_bits(int layer, int num_layers) {
  return layer < num_layers / 8 || layer >= 7 * num_layers / 8 || (layer - num_layers / 8) % 3 == 2;
}

int resolve_threads(int num_threads) {
  if (num_threads > 0) return num_threads;
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

/// Decodes and re-encodes rows [begin, end) of `from` into `out` (rows of `to`).
result<void> convert_rows(const weight_tensor& from, weight_dtype to, std::int64_t begin, std::int64_t end,
                          std::byte* out) {
  std::vector<float> row(std::size_t(from.cols()));
  const auto stride = row_bytes(to, from.cols());
  for (std::int64_t r = begin; r < end; ++r) {
    if (auto ok = try_row_to_f32(from, r, row); !ok) return ok;
    if (auto ok = quantize_row(to, row.data(), from.cols(), out + r * stride); !ok) return ok;
  }
  return {};
}

}  // namespace

result<quant_recipe> try_parse_recipe(std::string_view name) {
  std::string lower(name);
  std::ranges::transform(lower, lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (lower == "q4_k_m") return quant_recipe{weight_dtype::q4_k, true};
  if (auto dtype = try_parse_weight_dtype(lower)) return quant_recipe{*dtype, false};
  return make_error(errc::invalid_argument,
                    "unknown weight type '" + std::string(name) + "' (" + weight_dtype_names() + " | q4_k_m)");
}

std::string to_string(const quant_recipe& recipe) { return recipe.is_q4_k_m ? "q4_k_m" : to_string(recipe.base); }

weight_dtype dtype_for(const quant_recipe& recipe, matrix_role role, int layer, int num_layers, bool is_tied) {
  if (!recipe.is_q4_k_m) return recipe.base;
  switch (role) {
    case matrix_role::classifier: return weight_dtype::q6_k;
    case matrix_role::token_embedding: return is_tied ? weight_dtype::q6_k : weight_dtype::q4_k;
    case matrix_role::wv:
    case matrix_role::w_down: return uses_more_bits(layer, num_layers) ? weight_dtype::q6_k : weight_dtype::q4_k;
    default: return weight_dtype::q4_k;
  }
}

weight_dtype fallback_for(weight_dtype wanted, std::int64_t cols) {
  if (fits_blocks(wanted, cols)) return wanted;
  if (wanted == weight_dtype::q4_k && fits_blocks(weight_dtype::q5_0, cols)) return weight_dtype::q5_0;
  if (wanted == weight_dtype::q5_k && fits_blocks(weight_dtype::q5_1, cols)) return weight_dtype::q5_1;
  const bool is_low_k = wanted == weight_dtype::q2_k || wanted == weight_dtype::q3_k;
  if (is_low_k && fits_blocks(weight_dtype::q4_0, cols)) return weight_dtype::q4_0;
  if (is_quantized(wanted) && fits_blocks(weight_dtype::q8_0, cols)) return weight_dtype::q8_0;
  return weight_dtype::f16;
}

result<weight_tensor> try_convert(const weight_tensor& tensor, weight_dtype to, int num_threads) {
  if (tensor.empty()) return weight_tensor{};
  if (!fits_blocks(to, tensor.cols())) {
    return make_error(errc::invalid_argument, std::string("a row of ") + std::to_string(tensor.cols()) +
                                                  " values is not a whole number of " + to_string(to) + " blocks");
  }
  std::vector<std::byte> bytes;
  try {
    bytes.resize(std::size_t(tensor.rows() * row_bytes(to, tensor.cols())));
  } catch (const std::bad_alloc&) {
    return make_error(errc::out_of_memory, "not enough memory to convert a weight matrix");
  }
  const int workers = std::clamp<std::int64_t>(resolve_threads(num_threads), 1, std::max<std::int64_t>(1, tensor.rows() / 16));
  std::vector<result<void>> results(std::size_t(workers), result<void>{});
  {
    std::vector<std::jthread> team;
    for (int w = 0; w < workers; ++w) {
      const std::int64_t begin = tensor.rows() * w / workers, end = tensor.rows() * (w + 1) / workers;
      team.emplace_back([&, w, begin, end] { results[std::size_t(w)] = convert_rows(tensor, to, begin, end, bytes.data()); });
    }
  }
  for (auto& r : results) {
    if (!r) return std::unexpected(r.error());
  }
  return weight_tensor::from_bytes(to, tensor.rows(), tensor.cols(), std::move(bytes));
}

result<void> try_quantize_weights(model_weights& weights, const quant_recipe& recipe, int num_threads) {
  const int num_layers = int(weights.layers.size());
  const bool is_tied = weights.classifier.empty();
  auto convert = [&](weight_tensor& t, matrix_role role, int layer) -> result<void> {
    if (t.empty()) return {};
    const auto to = fallback_for(dtype_for(recipe, role, layer, num_layers, is_tied), t.cols());
    if (to == t.dtype()) return {};
    auto converted = try_convert(t, to, num_threads);
    if (!converted) return std::unexpected(converted.error());
    t = std::move(*converted);
    return {};
  };
  if (auto ok = convert(weights.token_embedding, matrix_role::token_embedding, 0); !ok) return ok;
  if (auto ok = convert(weights.classifier, matrix_role::classifier, num_layers - 1); !ok) return ok;
  for (int i = 0; i < num_layers; ++i) {
    auto& l = weights.layers[std::size_t(i)];
    const std::pair<weight_tensor*, matrix_role> matrices[] = {
        {&l.wq, matrix_role::wq},         {&l.wk, matrix_role::wk},     {&l.wv, matrix_role::wv},
        {&l.wo, matrix_role::wo},         {&l.w_gate, matrix_role::w_gate}, {&l.w_up, matrix_role::w_up},
        {&l.w_down, matrix_role::w_down}, {&l.gate_exps, matrix_role::w_gate}, {&l.up_exps, matrix_role::w_up},
        {&l.down_exps, matrix_role::w_down}};  // the router stays as it is (llama-quantize keeps it f32)
    for (const auto& [t, role] : matrices) {
      if (auto ok = convert(*t, role, i); !ok) return ok;
    }
  }
  return {};
}

}  // namespace inflight

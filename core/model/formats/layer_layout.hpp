#pragma once
/// How the files describe their layers' layout, shared by the GGUF and Hugging Face
/// readers and the GGUF writer.

#include <optional>
#include <vector>

#include "core/model/model_family.hpp"

namespace inflight {

/// The window period (model_config::window_period) that per-layer flags describe (true:
/// the layer reads through the sliding window): 0 when every layer is windowed, n when
/// layer l is windowed exactly unless l % n == n - 1; none when no period fits.
inline std::optional<int> window_period_of(const std::vector<bool>& windowed) {
  int period = 0;
  for (std::size_t i = 0; i < windowed.size() && period == 0; ++i) {
    if (!windowed[i]) period = int(i) + 1;
  }
  for (std::size_t i = 0; i < windowed.size(); ++i) {
    if (windowed[i] != (period == 0 || int(i) % period != period - 1)) return std::nullopt;
  }
  return period;
}

/// GGUF's name of a layer's pre-MLP norm: gpt-oss calls it post_attention_norm (it
/// follows the attention); the others ffn_norm.
inline const char* gguf_ffn_norm_name(const model_config& c) {
  return family_of(c).name == "gpt-oss" ? "post_attention_norm.weight" : "ffn_norm.weight";
}

}  // namespace inflight

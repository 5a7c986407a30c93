#pragma once
/// The small decoder shapes of the tests, spelled once: a test names the sizes it needs
/// and changes what else it tests after (RoPE style, tied classifier, biases, family).

#include <stdexcept>

#include "core/model/formats/shapes.hpp"
#include "core/model/model_config.hpp"

namespace inflight::test {

struct test_shape {
  int dim = 32;
  int hidden = 48;
  int layers = 2;
  int heads = 4;
  int kv_heads = 2;
  int head_dim = 0;  ///< 0 = dim / heads
  int vocab = 50;
  int max_seq_len = 128;
};

/// `s` over model_config's defaults: a Llama decoder, interleaved RoPE, tied classifier.
inline model_config small_config(const test_shape& s = {}) {
  model_config c;
  c.dim = s.dim;
  c.hidden_dim = s.hidden;
  c.num_layers = s.layers;
  c.num_heads = s.heads;
  c.num_kv_heads = s.kv_heads;
  c.head_dim = s.head_dim > 0 ? s.head_dim : s.dim / s.heads;
  c.vocab_size = s.vocab;
  c.max_seq_len = s.max_seq_len;
  return c;
}

/// small_config drawn as a Qwen3 (try_as_family: per-head q/k norms, rotate_half RoPE).
inline model_config small_qwen3_config(const test_shape& s = {}) {
  auto q = try_as_family(small_config(s), "qwen3");
  if (!q) throw std::runtime_error(q.error().message);
  return *q;
}

}  // namespace inflight::test

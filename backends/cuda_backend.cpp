#ifdef INFLIGHT_HAS_CUDA

#include "backends/cuda_backend.hpp"

#include <optional>

#include <algorithm>
#include <chrono>

#include "backends/kernel_views.hpp"
#include "core/engine/sampling/sampler.hpp"

namespace inflight {

namespace {

error to_error(const kernels::cuda::status& st) { return error{errc::backend_error, "cuda: " + st.describe()}; }

}  // namespace

result<std::unique_ptr<cuda_backend>> cuda_backend::create(std::shared_ptr<const model_weights> weights,
                                                           const cuda_backend_options& o) {
  if (!weights) return make_error(errc::invalid_argument, "cuda backend: no weights");
  if (o.block_size <= 0) return make_error(errc::invalid_argument, "kv block_size must be > 0");
  if (!(o.gpu_memory_utilization > 0.0 && o.gpu_memory_utilization <= 1.0)) {
    return make_error(errc::invalid_argument, "engine.gpu_memory_utilization must be in (0, 1]");
  }
  const auto& c = weights->config;
  // Layer kinds the CUDA kernels do not compute yet: refused by name, not run wrongly.
  if (c.moe.enabled()) {
    return make_error(errc::unsupported, "cuda backend: mixture-of-experts models (" + c.architecture +
                                             ") run on the cpu backend only for now; set engine.backend = \"cpu\"");
  }
  if (c.rope_dims != 0 || c.scaling.type == rope_scaling_type::yarn || c.scaling.type == rope_scaling_type::longrope) {
    return make_error(errc::unsupported, "cuda backend: partial rotary dimensions, YaRN and LongRoPE scaling run on the "
                                         "cpu backend only for now; set engine.backend = \"cpu\"");
  }
  if (c.sliding_window > 0 || c.post_norms || c.activation != mlp_activation::silu || c.attn_softcap != 0.0f ||
      c.attention_sinks || c.output_bias ||
      c.final_softcap != 0.0f || c.embedding_scale != 1.0f || c.attention_scale != 0.0f) {
    return make_error(errc::unsupported, "cuda backend: " + c.architecture +
                                             "'s layers (sliding windows, post-norms, GeGLU, soft-capping, scaled "
                                             "embeddings, sinks, output biases) run on the cpu backend only for now; set engine.backend = \"cpu\"");
  }
  // weight_format::expand: the device takes fp32 host arrays and converts them, other
  // types decoded first into a copy that lives only until the upload is done.
  // weight_format::file and fp8: the runner takes every type (q8_0 / q4_0 / q4_k / q6_k
  // blocks as they are, or E4M3), the others decoded a slice at a time.
  std::optional<model_weights> decoded;
  if (o.weights == kernels::cuda::weight_format::expand &&
      weight_dtypes_of(*weights) != std::vector<weight_dtype>{weight_dtype::f32}) {
    auto f32 = try_decode_to_f32(*weights);
    if (!f32) return std::unexpected(f32.error());
    decoded = std::move(*f32);
  }
  const model_weights& host = decoded ? *decoded : *weights;
  const auto layers = to_layer_views(host);
  const auto view = to_weights_view(host, layers);
  kernels::cuda::runner_options ro;
  ro.dt = o.use_fp16 ? kernels::cuda::dtype::f16 : kernels::cuda::dtype::bf16;
  ro.device = o.device;
  ro.block_size = o.block_size;
  ro.num_kv_blocks = o.num_kv_blocks;
  ro.gpu_memory_utilization = o.gpu_memory_utilization;
  ro.max_context = o.max_context > 0 ? o.max_context : (c.max_seq_len > 0 ? c.max_seq_len : 4096);
  ro.max_num_seqs = std::max(1, o.max_num_seqs);
  ro.max_num_tokens = std::max(1, o.max_num_batched_tokens);
  ro.use_graphs = o.use_graphs;
  ro.decode = o.decode_attention;
  ro.prefill = o.prefill_attention;
  ro.weights = o.weights;
  std::unique_ptr<kernels::cuda::llama_runner> runner;
  if (auto st = kernels::cuda::llama_runner::try_create(to_kernel_shape(c), view, ro, runner); !st.is_ok()) {
    return std::unexpected(to_error(st));
  }
  return std::unique_ptr<cuda_backend>(new cuda_backend(std::move(weights), std::move(runner), o.device_grammar_mask));
}

cuda_backend::cuda_backend(std::shared_ptr<const model_weights> weights,
                           std::unique_ptr<kernels::cuda::llama_runner> runner, bool device_grammar_mask)
    : weights_(std::move(weights)), runner_(std::move(runner)), device_grammar_mask_(device_grammar_mask) {}

cuda_backend::row_path cuda_backend::path_of(const seq_step& s) const {
  if (is_raw_greedy(s)) return row_path::greedy;
  if (device_grammar_mask_ && is_masked_greedy(s)) return row_path::masked_greedy;
  return row_path::host;
}

result<void> cuda_backend::run(const step_plan& plan) {
  if (std::ranges::any_of(plan.seqs, [](const seq_step& s) { return s.hidden != hidden_output::none; })) {
    return make_error(errc::unsupported,
                      "cuda backend: embeddings (final hidden states) are not implemented on the cuda backend yet; "
                      "serve /v1/embeddings with engine.backend = \"cpu\"");
  }
  const ragged_batch_bounds bounds{weights_->config.vocab_size, runner_->num_kv_blocks(), runner_->block_size(),
                                   runner_->max_context()};
  if (auto ok = batch_.try_flatten(plan, bounds); !ok) return std::unexpected(ok.error());
  const auto b = batch_.view();
  greedy_tokens_.assign(std::size_t(b.num_logits), 0);
  greedy_logprobs_.assign(std::size_t(b.num_logits), 0.0f);
  row_logits_.assign(std::size_t(b.num_row_logits), 0.0f);
  if (auto st = runner_->forward(b, greedy_tokens_.data(), greedy_logprobs_.data(), row_logits_.data()); !st.is_ok()) {
    return std::unexpected(to_error(st));
  }
  return {};
}

result<std::span<const float>> cuda_backend::forward(const step_plan& plan) {
  if (auto ok = run(plan); !ok) return std::unexpected(ok.error());
  const int rows = batch_.num_logits();
  logits_.resize(std::size_t(rows) * std::size_t(weights_->config.vocab_size));
  if (auto st = runner_->copy_logits(logits_.data(), rows); !st.is_ok()) return std::unexpected(to_error(st));
  return std::span<const float>(logits_);
}

result<step_result> cuda_backend::execute(const step_plan& plan) {
  const auto start = std::chrono::steady_clock::now();
  if (auto ok = run(plan); !ok) return std::unexpected(ok.error());
  const auto vocab = std::size_t(weights_->config.vocab_size);
  // The GPU's arg-max answers raw-greedy rows exactly as core's sampler would, and, with
  // device_grammar_mask, greedy rows under a grammar mask; every other row (penalties,
  // logit_bias, temperature, top logprobs) goes through core's one sampling pipeline on
  // the host.
  const bool needs_host_rows = std::ranges::any_of(plan.seqs, [this](const seq_step& s) {
    return s.do_sample && path_of(s) == row_path::host;
  });
  masked_rows_.clear();
  masked_words_.clear();
  const std::size_t words = (vocab + 63) / 64;
  {
    int k = 0;
    for (const auto& s : plan.seqs) {
      if (!s.do_sample) continue;
      if (path_of(s) == row_path::masked_greedy) {
        masked_rows_.push_back(k);
        const std::size_t n = std::min(words, s.allowed_tokens.size());
        masked_words_.insert(masked_words_.end(), s.allowed_tokens.begin(), s.allowed_tokens.begin() + std::ptrdiff_t(n));
        masked_words_.resize(masked_words_.size() + (words - n), 0);  // tokens past the grammar's: not allowed
      }
      k += s.num_sample_rows();  // a drafted step (never masked_greedy) samples several rows
    }
  }
  masked_tokens_.assign(masked_rows_.size(), 0);
  masked_logprobs_.assign(masked_rows_.size(), 0.0f);
  if (!masked_rows_.empty()) {
    if (auto st = runner_->masked_greedy(masked_rows_, masked_words_.data(), int(words), masked_tokens_.data(),
                                         masked_logprobs_.data());
        !st.is_ok()) {
      return std::unexpected(to_error(st));
    }
  }
  if (needs_host_rows) {
    logits_.resize(std::size_t(batch_.num_logits()) * vocab);
    if (auto st = runner_->copy_logits(logits_.data(), batch_.num_logits()); !st.is_ok()) {
      return std::unexpected(to_error(st));
    }
  }
  step_result out;
  out.step_id = plan.step_id;
  std::size_t masked = 0;  // masked_greedy rows in plan order
  out.tokens = sample_rows(plan, [&](const seq_step& s, std::size_t row, int draft_row) {
    sampled_token token;
    switch (path_of(s)) {
      case row_path::greedy:
        token.token = greedy_tokens_[row];
        token.logprob = greedy_logprobs_[row];
        break;
      case row_path::masked_greedy:
        token.token = masked_tokens_[masked];
        token.logprob = masked_logprobs_[masked];
        ++masked;
        break;
      case row_path::host:
        token = sample(std::span<const float>(logits_.data() + row * vocab, vocab), s, draft_row);
        break;
    }
    return token;
  });
  out.rows = split_row_logits(plan, batch_, row_logits_);
  out.backend_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace inflight

#endif  // INFLIGHT_HAS_CUDA

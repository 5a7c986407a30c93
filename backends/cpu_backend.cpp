#include "backends/cpu_backend.hpp"

#include <chrono>

#include "core/engine/sampling/sampler.hpp"
#include "kernels/cpu/cpu_threads.hpp"

namespace inflight {

result<std::unique_ptr<cpu_backend>> cpu_backend::create(std::shared_ptr<const model_weights> weights,
                                                         const kv_cache_config& kv, const cpu_backend_options& options) {
  if (!weights) return make_error(errc::invalid_argument, "cpu backend: no weights");
  if (options.num_threads < 0) return make_error(errc::invalid_argument, "cpu backend: threads must be >= 0");
  if (options.isa && !kernels::cpu::can_run(*options.isa)) {
    return make_error(errc::unsupported, std::string("cpu backend: this CPU cannot run the ") +
                                             kernels::cpu::to_string(*options.isa) + " kernels");
  }
  const auto& c = weights->config;
  const int kv_value_bytes = kernels::cpu::element_bytes(options.kv_type);
  const auto bytes_per_token = kv_bytes_per_token(c.num_layers, c.num_kv_heads, c.head_dim, kv_value_bytes);
  auto num_blocks = try_resolve_num_blocks(kv, bytes_per_token);
  if (!num_blocks) return std::unexpected(num_blocks.error());
  return std::unique_ptr<cpu_backend>(new cpu_backend(std::move(weights), *num_blocks, kv.block_size, options));
}

cpu_backend::cpu_backend(std::shared_ptr<const model_weights> weights, int num_blocks, int block_size,
                         const cpu_backend_options& options)
    : weights_(std::move(weights)), num_blocks_(num_blocks), block_size_(block_size) {
  forward_options_.kernels = &kernels::cpu::kernels_for(options.isa.value_or(kernels::cpu::detect_cpu_isa()));
  forward_options_.num_threads =
      options.num_threads > 0 ? options.num_threads : int(kernels::cpu::physical_core_cpus().size());
  is_pin_pending_ = options.pin_threads;
  const auto& c = weights_->config;
  shape_ = to_kernel_shape(c);
  layer_views_ = to_layer_views(*weights_);
  kv_type_ = options.kv_type;
  const auto layer_bytes =
      std::size_t(num_blocks_) * block_size_ * c.kv_dim() * std::size_t(kernels::cpu::element_bytes(kv_type_));
  k_cache_.assign(c.num_layers, std::vector<std::byte>(layer_bytes));
  v_cache_.assign(c.num_layers, std::vector<std::byte>(layer_bytes));
  for (int l = 0; l < c.num_layers; ++l) {
    k_ptrs_.push_back(k_cache_[l].data());
    v_ptrs_.push_back(v_cache_[l].data());
  }
}

result<void> cpu_backend::bind_adapters(const step_plan& plan) {
  const auto& c = weights_->config;
  adapter_layers_.resize(plan.adapters.size());
  adapter_views_.clear();
  max_lora_rank_ = 0;
  for (std::size_t i = 0; i < plan.adapters.size(); ++i) {
    const lora_adapter* a = plan.adapters[i].get();
    if (a == nullptr) return make_error(errc::invalid_argument, "step plan: LoRA adapter " + std::to_string(i) + " is missing");
    if (int(a->layers.size()) != c.num_layers)
      return make_error(errc::invalid_argument, a->source + ": an adapter of " + std::to_string(a->layers.size()) +
                                                    " layers for a model of " + std::to_string(c.num_layers));
    auto& layers = adapter_layers_[i];
    layers.assign(std::size_t(c.num_layers), {});
    for (int l = 0; l < c.num_layers; ++l) {
      for (int m = 0; m < num_lora_modules; ++m) {
        const auto& u = a->layers[std::size_t(l)][std::size_t(m)];
        if (u.a.empty()) continue;
        layers[std::size_t(l)][std::size_t(m)] = {u.a.data(), u.b.data(), u.rank, u.scale};
        max_lora_rank_ = std::max(max_lora_rank_, u.rank);
      }
    }
    adapter_views_.push_back({layers.data()});
  }
  return {};
}

result<std::span<const float>> cpu_backend::forward(const step_plan& plan) {
  if (auto ok = bind_adapters(plan); !ok) return std::unexpected(ok.error());
  const ragged_batch_bounds bounds{shape_.vocab_size, num_blocks_, block_size_, 0, int(adapter_views_.size())};
  if (auto ok = batch_.try_flatten(plan, bounds); !ok) return std::unexpected(ok.error());
  const auto b = batch_.view();
  auto wv = to_weights_view(*weights_, layer_views_);
  wv.adapters = adapter_views_.data();
  wv.num_adapters = int(adapter_views_.size());
  wv.max_lora_rank = max_lora_rank_;
  const kernels::cpu::paged_kv_view kv{k_ptrs_.data(), v_ptrs_.data(), num_blocks_, block_size_, kv_type_};
  logits_.resize(std::size_t(b.num_logits) * shape_.vocab_size);
  row_logits_.resize(std::size_t(b.num_row_logits));
  hidden_.resize(std::size_t(b.num_hidden) * std::size_t(shape_.dim));
  if (is_pin_pending_) {
    // The team belongs to the thread that runs the steps (the executor's), known only now.
    is_pin_pending_ = false;
    kernels::cpu::pin_team(forward_options_.num_threads, kernels::cpu::physical_core_cpus());
  }
  if (b.num_tokens > 0) {
    kernels::cpu::llama_forward(shape_, wv, kv, b, workspace_, logits_.data(), row_logits_.data(), forward_options_,
                                hidden_.data());
  }
  return std::span<const float>(logits_);
}

result<step_result> cpu_backend::execute(const step_plan& plan) {
  const auto start = std::chrono::steady_clock::now();
  for (const auto& s : plan.seqs) {
    if (s.num_tail_logits > 0) return make_error(errc::invalid_argument, "step plan: tail logits are for forward()");
  }
  auto logits = forward(plan);
  if (!logits) return std::unexpected(logits.error());
  step_result out;
  out.step_id = plan.step_id;
  out.tokens = sample_rows(plan, [&](const seq_step& s, std::size_t logit_row, int row) {
    return sample(logits->subspan(logit_row * shape_.vocab_size, shape_.vocab_size), s, row);
  });
  out.rows = split_row_logits(plan, batch_, row_logits_);
  out.hidden = split_hidden(plan, hidden_, shape_.dim);
  out.backend_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace inflight

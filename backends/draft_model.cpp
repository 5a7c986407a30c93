#include "backends/draft_model.hpp"

#include <algorithm>

#include "core/model/formats/llama2c.hpp"
#include "core/model/model_loader.hpp"

namespace inflight {

result<std::unique_ptr<draft_model>> draft_model::create(std::shared_ptr<const model_weights> weights,
                                                     const draft_model_options& o) {
  if (o.vocab_size > 0 && weights->config.vocab_size != o.vocab_size)
    return make_error(errc::invalid_argument, "the draft model's vocabulary has " +
                                                  std::to_string(weights->config.vocab_size) + " tokens, the model's " +
                                                  std::to_string(o.vocab_size) + ": a draft model must share it");
  const int max_context = o.max_context > 0 ? std::min(o.max_context, weights->config.max_seq_len)
                                            : weights->config.max_seq_len;
  cpu_backend_options b;
  b.num_threads = o.num_threads;
  auto be = cpu_backend::create(std::move(weights), {o.block_size, 0, o.kv_memory_bytes}, b);
  if (!be) return std::unexpected(be.error());
  if ((*be)->num_kv_blocks() < 1) return make_error(errc::invalid_argument, "the draft model's KV pool holds no block");
  return std::unique_ptr<draft_model>(new draft_model(std::move(*be), max_context));
}

result<std::unique_ptr<draft_model>> draft_model::load(const std::string& path,
                                                   const draft_model_options& o) {
  model_settings s;
  s.path = path;
  std::shared_ptr<const model_weights> weights;
  if (resolve_format(s) == "llama2c") {  // weights only: the target's tokenizer is the one
    auto loaded = load_llama2c(path);
    if (!loaded) return make_error(loaded.error().code, "draft model: " + loaded.error().message);
    weights = std::make_shared<const model_weights>(std::move(*loaded));
  } else {
    auto loaded = load_model(s);
    if (!loaded) return make_error(loaded.error().code, "draft model: " + loaded.error().message);
    weights = loaded->weights;
  }
  return create(std::move(weights), o);
}

result<draft_result> draft_model::run(const draft_plan& plan) {
  return run_draft_plan(plan, [&](const step_plan& step) -> result<step_result> {
    ++num_steps_;
    num_tokens_fed_ += std::uint64_t(step.num_tokens());
    return backend_->execute(step);
  });
}

}  // namespace inflight

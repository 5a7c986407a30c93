#include "backends/draft_model.hpp"

#include <algorithm>

#include "core/model/formats/llama2c.hpp"
#include "core/model/model_loader.hpp"

namespace inflight {

result<std::unique_ptr<draft_model_drafter>> draft_model_drafter::create(std::shared_ptr<const model_weights> weights,
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
  return std::unique_ptr<draft_model_drafter>(new draft_model_drafter(std::move(*be), max_context));
}

result<std::unique_ptr<draft_model_drafter>> draft_model_drafter::load(const std::string& path,
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

draft_model_drafter::draft_model_drafter(std::unique_ptr<cpu_backend> backend, int max_context)
    : backend_(std::move(backend)), max_context_(max_context) {
  for (int b = backend_->num_kv_blocks() - 1; b >= 0; --b) free_.push_back(b);
}

void draft_model_drafter::release(cache& c) {
  free_.insert(free_.end(), c.blocks.begin(), c.blocks.end());
  c.blocks.clear();
  c.tokens.clear();
}

void draft_model_drafter::forget(seq_id id) {
  auto it = caches_.find(id);
  if (it == caches_.end()) return;
  release(it->second);
  caches_.erase(it);
}

bool draft_model_drafter::try_reserve(seq_id id, cache& c, int num_positions) {
  const int bs = backend_->block_size();
  const auto needed = std::size_t((num_positions + bs - 1) / bs);
  while (c.blocks.size() + free_.size() < needed) {
    auto oldest = caches_.end();
    for (auto it = caches_.begin(); it != caches_.end(); ++it) {
      if (it->first == id || it->second.blocks.empty()) continue;
      if (oldest == caches_.end() || it->second.last_used < oldest->second.last_used) oldest = it;
    }
    if (oldest == caches_.end()) return false;
    release(oldest->second);
  }
  while (c.blocks.size() < needed) {
    c.blocks.push_back(free_.back());
    free_.pop_back();
  }
  return true;
}

std::vector<token_id> draft_model_drafter::propose(seq_id id, std::span<const token_id> tokens, int k) {
  std::vector<token_id> out;
  k = std::min(k, max_context_ - int(tokens.size()));
  if (k <= 0 || tokens.empty()) return out;
  cache& c = caches_[id];
  c.last_used = ++clock_;
  // Keep the common prefix, never the last token: it is fed again for its logits.
  std::size_t common = 0;
  while (common < c.tokens.size() && common + 1 < tokens.size() && c.tokens[common] == tokens[common]) ++common;
  c.tokens.resize(common);
  if (!try_reserve(id, c, int(tokens.size()) + k - 1)) {
    forget(id);
    return out;
  }
  step_plan plan;
  plan.seqs.resize(1);
  seq_step& s = plan.seqs[0];
  s.id = id;
  s.do_sample = true;
  s.params.temperature = 0.0f;  // greedy: a one-token proposal (see sample_rows)
  s.start_position = int(common);
  s.tokens.assign(tokens.begin() + std::ptrdiff_t(common), tokens.end());
  s.block_table = c.blocks;
  for (int i = 0; i < k; ++i) {
    plan.step_id = ++num_steps_;
    auto r = backend_->execute(plan);
    if (!r || r->tokens.empty()) {
      forget(id);  // its cache may be half written
      return out;
    }
    num_tokens_fed_ += s.tokens.size();
    c.tokens.insert(c.tokens.end(), s.tokens.begin(), s.tokens.end());
    out.push_back(r->tokens[0].token);
    s.start_position = int(c.tokens.size());
    s.tokens.assign(1, out.back());
  }
  return out;
}

}  // namespace inflight

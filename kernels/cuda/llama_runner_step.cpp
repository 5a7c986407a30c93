// llama_runner steps: batch staging, the layer sequence, and decode graphs.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda/decode_split.hpp"
#include "kernels/cuda/fp8.hpp"
#include "kernels/cuda/llama_runner.hpp"

namespace inflight::kernels::cuda {
namespace {

std::byte* at(const device_buffer& b, std::int64_t elems, std::size_t el) {
  return b.as<std::byte>() + elems * std::int64_t(el);
}

constexpr int largest_graph_batch = graph_batch_sizes[std::size(graph_batch_sizes) - 1];

status bad_batch(const std::string& what) { return status::failure("cuda runner: " + what, __FILE__, __LINE__); }

}  // namespace

status llama_runner::ensure_capacity(int num_tokens, int num_seqs) {
  if (num_tokens <= cap_.tokens && num_seqs <= cap_.seqs) return status::ok();
  capacity cap = cap_;
  cap.seqs = std::max(cap.seqs, num_seqs);
  cap.tokens = std::max({cap.tokens, num_tokens, cap.seqs});
  INFLIGHT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return allocate_workspace(cap);
}

status llama_runner::check_batch(const cpu::ragged_batch_view& b) const {
  if (b.num_seqs <= 0 || b.query_start[0] != 0 || b.query_start[b.num_seqs] != b.num_tokens) {
    return bad_batch("query_start does not cover the tokens");
  }
  const std::int64_t num_slots = std::int64_t(num_blocks_) * options_.block_size;
  for (int s = 0; s < b.num_seqs; ++s) {
    if (b.query_start[s + 1] <= b.query_start[s]) return bad_batch("a sequence without tokens");
    int last = 0;
    for (int t = b.query_start[s]; t < b.query_start[s + 1]; ++t) {
      if (b.token_ids[t] < 0 || b.token_ids[t] >= shape_.vocab_size) return bad_batch("token id outside the vocabulary");
      if (b.positions[t] < 0 || b.positions[t] >= options_.max_context) {
        return bad_batch("position " + std::to_string(b.positions[t]) + " outside the context of " +
                         std::to_string(options_.max_context));
      }
      if (b.slot_mapping[t] < 0 || b.slot_mapping[t] >= num_slots) return bad_batch("KV slot outside the cache");
      last = std::max(last, b.positions[t]);
    }
    const int num_needed = last / options_.block_size + 1;
    if (num_needed > b.block_table_stride) return bad_batch("block table shorter than the positions");
    for (int i = 0; i < num_needed; ++i) {
      const auto blk = b.block_tables[std::int64_t(s) * b.block_table_stride + i];
      if (blk < 0 || blk >= num_blocks_) return bad_batch("block id outside the cache");
    }
  }
  for (int k = 0; k < b.num_logits; ++k) {
    if (b.logit_indices[k] < 0 || b.logit_indices[k] >= b.num_tokens) return bad_batch("logit index outside the batch");
  }
  if (b.num_scored > b.num_seqs) return bad_batch("more scored tokens than sequences");
  for (int k = 0; k < b.num_scored; ++k) {
    if (b.scored_indices[k] < 0 || b.scored_indices[k] >= b.num_tokens) return bad_batch("scored token outside the batch");
  }
  for (int k = 0; k < b.num_row_logits; ++k) {
    if (b.row_logit_positions[k] < 0 || b.row_logit_positions[k] >= b.num_scored) return bad_batch("bad row position");
    if (b.row_logit_ids[k] < 0 || b.row_logit_ids[k] >= shape_.vocab_size) return bad_batch("logit row outside the vocabulary");
  }
  return status::ok();
}

status llama_runner::stage_batch(const cpu::ragged_batch_view& b, int padded_seqs) {
  const auto lay = layout();
  auto* h = batch_host_.as<std::int32_t>();
  const int n = b.num_tokens, rows = std::max(padded_seqs, b.num_seqs);
  const std::int32_t trash_block = num_blocks_;
  std::copy_n(b.token_ids, n, h + lay.ids);
  std::copy_n(b.positions, n, h + lay.positions);
  std::copy_n(b.slot_mapping, n, h + lay.slots);
  std::copy_n(b.query_start, b.num_seqs + 1, h + lay.query_start);
  // Padding rows (graphs only): one token at position 0 of a sequence in the scratch block.
  for (int t = n; t < rows; ++t) {
    h[lay.ids + t] = 0;
    h[lay.positions + t] = 0;
    h[lay.slots + t] = trash_block * options_.block_size;
    h[lay.query_start + t + 1] = t + 1;
  }
  logit_rows_.assign(b.logit_indices, b.logit_indices + b.num_logits);
  if (padded_seqs > 0) {
    for (int r = 0; r < padded_seqs; ++r) h[lay.logit_rows + r] = r;  // every row: the graph is fixed
  } else {
    std::copy_n(b.logit_indices, b.num_logits, h + lay.logit_rows);
    for (int k = 0; k < b.num_logits; ++k) logit_rows_[std::size_t(k)] = k;
  }
  // A mixed step: sequences of one query token (decodes, one-token chunks) take the
  // decode kernel, the others prefill tiles. A decode step (every sequence one token)
  // takes the decode kernel over all rows.
  const bool is_decode = b.num_tokens == b.num_seqs;
  staged_tiles_ = 0;
  staged_decode_rows_ = 0;
  std::int64_t total_context = 0;
  int max_context = 1;
  for (int s = 0; s < b.num_seqs; ++s) {
    if (b.query_start[s + 1] - b.query_start[s] == 1) {
      const int ctx = b.positions[b.query_start[s]] + 1;
      total_context += ctx;
      max_context = std::max(max_context, ctx);
      if (!is_decode) h[lay.decode_seqs + staged_decode_rows_++] = s;
      continue;
    }
    for (int first = b.query_start[s]; first < b.query_start[s + 1]; first += prefill_tile_tokens) {
      std::int32_t* tile = h + lay.tiles + 3 * staged_tiles_++;
      tile[0] = s;
      tile[1] = first;
      tile[2] = std::min(first + prefill_tile_tokens, b.query_start[s + 1]);
    }
  }
  // The decode split size from these rows' contexts (the grid's splits are fixed by the
  // row count, which a replayed graph shares; padding rows have one key each).
  const int decode_rows = is_decode ? rows : staged_decode_rows_;
  h[lay.params] = decode_split_size(total_context + (is_decode ? rows - b.num_seqs : 0), max_context,
                                    shape_.num_kv_heads, num_sms_, decode_splits(std::max(1, decode_rows)));
  const int copy_width = std::min(b.block_table_stride, block_table_stride_);
  for (int s = 0; s < rows; ++s) {
    std::int32_t* row = h + lay.tables + std::int64_t(s) * block_table_stride_;
    std::fill_n(row, block_table_stride_, trash_block);
    if (s < b.num_seqs) std::copy_n(b.block_tables + std::int64_t(s) * b.block_table_stride, copy_width, row);
  }
  const auto num_ints = lay.tables + std::int64_t(rows) * block_table_stride_;
  INFLIGHT_CUDA_CHECK(cudaMemcpyAsync(batch_dev_.as(), h, std::size_t(num_ints) * sizeof(std::int32_t),
                                      cudaMemcpyHostToDevice, stream_));
  return status::ok();
}

status llama_runner::run_linear(const linear& w, const void* x, int n, void* y, bool y_f32) {
  const dtype dt = options_.dt;
  const std::size_t out_el = y_f32 ? sizeof(float) : dtype_bytes(dt);
  bool prepared[cpu::num_input_formats] = {};
  for (const auto& part : w.parts) {
    void* out = static_cast<std::byte*>(y) + std::size_t(part.out_offset) * out_el;
    if (part.kind == part_kind::dense) {
      INFLIGHT_TRY_STATUS(blas_.linear(dt, x, part.data.as(), out, y_f32, n, w.in, part.rows, 0.0f, w.out));
      continue;
    }
    if (part.kind == part_kind::fp8) {
      // The step's activations to E4M3 with their own scale, then one cuBLASLt product.
      if (y_f32) return status::failure("cuda runner: fp8 products write dt rows", __FILE__, __LINE__);
      auto* scales = act_fp8_scale_.as<float>();
      INFLIGHT_TRY_STATUS(fp8_scale(fp8_source_of(dt), x, std::int64_t(n) * w.in, scales, scales + 1, stream_));
      INFLIGHT_TRY_STATUS(to_fp8(fp8_source_of(dt), x, std::int64_t(n) * w.in, scales + 1, act_fp8_.as<std::uint8_t>(),
                                 stream_));
      INFLIGHT_TRY_STATUS(blas_.fp8_linear(dt, act_fp8_.as<std::uint8_t>(), scales + 1, part.data.as<std::uint8_t>(),
                                           part.scale.as<float>(), out, n, w.in, part.rows, w.out));
      continue;
    }
    const auto& q = part.blocks;
    if (n >= quant_gemm_min_tokens) {
      // Rows dequantized into the scratch a slice at a time, each slice a cuBLAS GEMM.
      const int slice = int(std::max<std::int64_t>(1, std::int64_t(dequant_scratch_.bytes() / dtype_bytes(dt)) / w.in));
      for (int r = 0; r < part.rows; r += slice) {
        const int end = std::min(part.rows, r + slice);
        INFLIGHT_TRY_STATUS(dequantize_rows(q, r, end, dt, dequant_scratch_.as(), stream_));
        INFLIGHT_TRY_STATUS(blas_.linear(dt, x, dequant_scratch_.as(), static_cast<std::byte*>(out) + std::size_t(r) * out_el,
                                         y_f32, n, w.in, end - r, 0.0f, w.out));
      }
      continue;
    }
    const auto format = cpu::input_of(q.type);
    const auto row = cpu::prepared_row_bytes(format, w.in);
    auto* prep = prepared_[int(format)].as<std::byte>();
    if (!prepared[int(format)]) {
      INFLIGHT_TRY_STATUS(quantize_activations(dt, x, w.in, n, w.in, format, prep, row, stream_));
      prepared[int(format)] = true;
    }
    for (int t = 0; t < n; t += quant_gemv_max_tokens) {
      const int count = std::min(quant_gemv_max_tokens, n - t);
      INFLIGHT_TRY_STATUS(quant_gemv(q, prep + std::int64_t(t) * row, row, count,
                                     static_cast<std::byte*>(out) + std::size_t(t) * std::size_t(w.out) * out_el,
                                     y_f32, dt, w.out, stream_));
    }
  }
  return status::ok();
}

status llama_runner::gather_embedding(const std::int32_t* ids, int n) {
  const auto& part = embedding_.parts.front();
  if (part.kind == part_kind::dense) return embedding_gather(options_.dt, x_.as<float>(), part.data.as(), ids, n, shape_.dim, stream_);
  return dequantize_gather(part.blocks, ids, n, x_.as(), true, options_.dt, stream_);
}

status llama_runner::run_layer(int l, int n, int num_seqs, int num_tiles, bool is_decode) {
  const auto& w = layers_[std::size_t(l)];
  const auto lay = layout();
  const auto* dev = batch_dev_.as<std::int32_t>();
  const dtype dt = options_.dt;
  const std::size_t el = dtype_bytes(dt);
  const int d = shape_.dim, hd = shape_.head_dim, qd = shape_.num_heads * hd, kvd = shape_.num_kv_heads * hd;
  const int qkv = qkv_dim(), hidden = shape_.hidden_dim;
  const std::int64_t layer_elems = std::int64_t(num_blocks_ + 1) * options_.block_size * kvd;
  void* k_cache = at(kv_, 2ll * l * layer_elems, el);
  void* v_cache = at(kv_, (2ll * l + 1) * layer_elems, el);

  INFLIGHT_TRY_STATUS(add_rmsnorm(dt, xb_.as(), x_.as<float>(), l > 0 ? delta_.as() : nullptr, w.attn_norm.as<float>(),
                                  nullptr, n, d, shape_.norm_eps, true, stream_));
  INFLIGHT_TRY_STATUS(run_linear(w.wqkv, xb_.as(), n, qkv_.as(), false));
  if (w.bqkv.as() != nullptr) INFLIGHT_TRY_STATUS(add_bias(dt, qkv_.as(), w.bqkv.as<float>(), n, qkv, qkv, stream_));
  if (w.q_norm.as() != nullptr) {
    INFLIGHT_TRY_STATUS(qk_norm(dt, qkv_.as(), qkv, w.q_norm.as<float>(), w.k_norm.as<float>(), n, shape_.num_heads,
                                shape_.num_kv_heads, hd, shape_.norm_eps, stream_));
  }
  INFLIGHT_TRY_STATUS(rope(dt, qkv_.as(), qkv, dev + lay.positions, inv_freq_.as<float>(), n, shape_.num_heads,
                           shape_.num_kv_heads, hd, shape_.rope_interleaved, stream_));
  INFLIGHT_TRY_STATUS(kv_write(dt, k_cache, v_cache, qkv_.as(), qkv, qd, qd + kvd, dev + lay.slots, n, kvd, stream_));
  attention_args a;
  a.dt = dt;
  a.out = attn_.as();
  a.q = qkv_.as();
  a.q_stride = qkv;
  a.k_cache = k_cache;
  a.v_cache = v_cache;
  a.positions = dev + lay.positions;
  a.query_start = dev + lay.query_start;
  a.block_tables = dev + lay.tables;
  a.block_table_stride = block_table_stride_;
  a.num_tokens = n;
  a.num_seqs = num_seqs;
  a.block_size = options_.block_size;
  a.num_heads = shape_.num_heads;
  a.num_kv_heads = shape_.num_kv_heads;
  a.head_dim = hd;
  a.scale = 1.0f / std::sqrt(float(hd));
  const int decode_rows = is_decode ? num_seqs : staged_decode_rows_;
  if (!is_decode && num_tiles > 0) INFLIGHT_TRY_STATUS(attention_prefill(a, dev + lay.tiles, num_tiles, stream_, options_.prefill));
  if (decode_rows > 0) {
    decode_partials part = decode_partials_at(partials_.as<float>(), decode_rows, shape_.num_heads, hd,
                                              decode_splits(decode_rows));
    part.split_size_dev = dev + lay.params;
    a.num_seqs = decode_rows;
    if (!is_decode) a.decode_seqs = dev + lay.decode_seqs;
    INFLIGHT_TRY_STATUS(attention_decode(a, part, stream_, options_.decode));
  }
  INFLIGHT_TRY_STATUS(run_linear(w.wo, attn_.as(), n, delta_.as(), false));
  INFLIGHT_TRY_STATUS(add_rmsnorm(dt, xb_.as(), x_.as<float>(), delta_.as(), w.ffn_norm.as<float>(), nullptr, n, d,
                                  shape_.norm_eps, true, stream_));
  INFLIGHT_TRY_STATUS(run_linear(w.w_gate_up, xb_.as(), n, gate_up_.as(), false));
  INFLIGHT_TRY_STATUS(silu_mul(dt, hidden_.as(), gate_up_.as(), n, hidden, stream_));
  return run_linear(w.w_down, hidden_.as(), n, delta_.as(), false);
}

status llama_runner::run_device(int n, int num_seqs, int num_tiles, int num_logits, bool is_decode) {
  const auto lay = layout();
  const auto* dev = batch_dev_.as<std::int32_t>();
  const dtype dt = options_.dt;
  INFLIGHT_TRY_STATUS(gather_embedding(dev + lay.ids, n));
  for (int l = 0; l < shape_.num_layers; ++l) INFLIGHT_TRY_STATUS(run_layer(l, n, num_seqs, num_tiles, is_decode));
  if (num_logits == 0) return status::ok();
  // Only the sampled rows get the last residual add, the final norm and the classifier.
  INFLIGHT_TRY_STATUS(add_rmsnorm(dt, logits_in_.as(), x_.as<float>(), shape_.num_layers > 0 ? delta_.as() : nullptr,
                                  final_norm_.as<float>(), dev + lay.logit_rows, num_logits, shape_.dim,
                                  shape_.norm_eps, false, stream_));
  INFLIGHT_TRY_STATUS(run_linear(is_tied_ ? embedding_ : classifier_, logits_in_.as(), num_logits, logits_.as(), true));
  return greedy_sample(logits_.as<float>(), num_logits, shape_.vocab_size, sampled_tokens_.as<std::int32_t>(),
                       sampled_logprobs_.as<float>(), stream_);
}

status llama_runner::launch_graph(int padded_seqs) {
  auto it = graphs_.find(padded_seqs);
  if (it == graphs_.end()) {
    INFLIGHT_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    const auto captured = run_device(padded_seqs, padded_seqs, 0, padded_seqs, true);
    cudaGraph_t graph = nullptr;
    const auto end_rc = cudaStreamEndCapture(stream_, &graph);
    if (!captured.is_ok()) {
      if (graph != nullptr) cudaGraphDestroy(graph);
      return captured;
    }
    INFLIGHT_CUDA_CHECK(end_rc);
    cudaGraphExec_t exec = nullptr;
    const auto inst_rc = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    INFLIGHT_CUDA_CHECK(inst_rc);
    it = graphs_.emplace(padded_seqs, exec).first;
  }
  INFLIGHT_CUDA_CHECK(cudaGraphLaunch(it->second, stream_));
  return status::ok();
}

status llama_runner::forward(const cpu::ragged_batch_view& b, std::int32_t* tokens, float* logprobs,
                             float* row_logits) {
  last_used_graph_ = false;
  logit_rows_.clear();
  if (b.num_tokens <= 0) return status::ok();
  INFLIGHT_TRY_STATUS(check_batch(b));
  INFLIGHT_TRY_STATUS(ensure_capacity(b.num_tokens, std::max(b.num_seqs, b.num_logits)));
  const bool is_decode = b.num_tokens == b.num_seqs;  // with check_batch: one token per sequence
  int padded = 0;
  const bool has_rows = b.num_row_logits > 0 && row_logits != nullptr;
  if (is_decode && !has_rows && options_.use_graphs && b.num_seqs <= largest_graph_batch) {
    for (const int size : graph_batch_sizes) {
      if (b.num_seqs <= size) {
        padded = size;
        break;
      }
    }
    if (padded > cap_.seqs) padded = 0;
  }
  INFLIGHT_TRY_STATUS(stage_batch(b, padded));
  int num_rows = b.num_logits;
  if (padded > 0) {
    INFLIGHT_TRY_STATUS(launch_graph(padded));
    last_used_graph_ = true;
    num_rows = padded;
  } else {
    INFLIGHT_TRY_STATUS(run_device(b.num_tokens, b.num_seqs, staged_tiles_, b.num_logits, is_decode));
    if (has_rows) INFLIGHT_TRY_STATUS(run_row_logits(b, row_logits));
  }
  auto* host_tokens = results_host_.as<std::int32_t>();
  auto* host_logprobs = reinterpret_cast<float*>(host_tokens + cap_.seqs);
  if (num_rows > 0) {
    INFLIGHT_CUDA_CHECK(cudaMemcpyAsync(host_tokens, sampled_tokens_.as(), std::size_t(num_rows) * 4,
                                        cudaMemcpyDeviceToHost, stream_));
    INFLIGHT_CUDA_CHECK(cudaMemcpyAsync(host_logprobs, sampled_logprobs_.as(), std::size_t(num_rows) * 4,
                                        cudaMemcpyDeviceToHost, stream_));
  }
  INFLIGHT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (int k = 0; k < b.num_logits; ++k) {
    tokens[k] = host_tokens[logit_rows_[std::size_t(k)]];
    logprobs[k] = host_logprobs[logit_rows_[std::size_t(k)]];
  }
  return status::ok();
}

status llama_runner::run_row_logits(const cpu::ragged_batch_view& b, float* host_out) {
  const int s = b.num_scored, n = b.num_row_logits;
  rows_host_.assign(b.scored_indices, b.scored_indices + s);
  rows_host_.insert(rows_host_.end(), b.row_logit_positions, b.row_logit_positions + n);
  rows_host_.insert(rows_host_.end(), b.row_logit_ids, b.row_logit_ids + n);
  const auto& classifier = (is_tied_ ? embedding_ : classifier_).parts.front();
  // A classifier in blocks: the named rows dequantized first, then read as rows 0..n-1.
  const bool in_blocks = classifier.kind == part_kind::blocks;
  for (int k = 0; in_blocks && k < n; ++k) rows_host_.push_back(k);
  const std::size_t bytes = rows_host_.size() * sizeof(std::int32_t);
  if (rows_dev_.bytes() < bytes) INFLIGHT_TRY_STATUS(rows_dev_.try_allocate(bytes));
  if (row_logits_dev_.bytes() < std::size_t(n) * sizeof(float)) {
    INFLIGHT_TRY_STATUS(row_logits_dev_.try_allocate(std::size_t(n) * sizeof(float)));
  }
  INFLIGHT_CUDA_CHECK(cudaMemcpyAsync(rows_dev_.as(), rows_host_.data(), bytes, cudaMemcpyHostToDevice, stream_));
  const auto* scored = rows_dev_.as<std::int32_t>();
  const dtype dt = options_.dt;
  // The same last residual add and final norm as the sampled rows, for the scored tokens only.
  INFLIGHT_TRY_STATUS(add_rmsnorm(dt, logits_in_.as(), x_.as<float>(), shape_.num_layers > 0 ? delta_.as() : nullptr,
                                  final_norm_.as<float>(), scored, s, shape_.dim, shape_.norm_eps, false, stream_));
  const void* rows = classifier.data.as();
  const std::int32_t* row_ids = scored + s + n;
  if (in_blocks) {
    const std::size_t row_bytes = std::size_t(n) * std::size_t(shape_.dim) * dtype_bytes(dt);
    if (row_weights_dev_.bytes() < row_bytes) INFLIGHT_TRY_STATUS(row_weights_dev_.try_allocate(row_bytes));
    INFLIGHT_TRY_STATUS(dequantize_gather(classifier.blocks, row_ids, n, row_weights_dev_.as(), false, dt, stream_));
    rows = row_weights_dev_.as();
    row_ids = scored + s + 2 * n;
  }
  INFLIGHT_TRY_STATUS(classifier_rows(dt, row_logits_dev_.as<float>(), logits_in_.as(), rows, scored + s, row_ids, n,
                                      shape_.dim, stream_));
  INFLIGHT_CUDA_CHECK(cudaMemcpyAsync(host_out, row_logits_dev_.as(), std::size_t(n) * sizeof(float),
                                      cudaMemcpyDeviceToHost, stream_));
  return status::ok();
}

status llama_runner::masked_greedy(std::span<const int> ks, const std::uint64_t* masks, int words,
                                   std::int32_t* tokens, float* logprobs) {
  const int n = int(ks.size());
  if (n == 0) return status::ok();
  if (words < 1) return bad_batch("masked_greedy: a mask needs at least one word");
  // One upload: the rows' device ids (padded to 8 bytes), then the masks.
  const std::size_t rows_bytes = (std::size_t(n) * sizeof(std::int32_t) + 7) / 8 * 8;
  const std::size_t masks_bytes = std::size_t(n) * std::size_t(words) * sizeof(std::uint64_t);
  std::vector<std::byte> staged(rows_bytes + masks_bytes);
  auto* ids = reinterpret_cast<std::int32_t*>(staged.data());
  for (int j = 0; j < n; ++j) {
    const int k = ks[std::size_t(j)];
    if (k < 0 || k >= int(logit_rows_.size())) return bad_batch("masked_greedy: no such logits row in the last step");
    ids[j] = logit_rows_[std::size_t(k)];
  }
  std::memcpy(staged.data() + rows_bytes, masks, masks_bytes);
  if (mask_dev_.bytes() < staged.size()) INFLIGHT_TRY_STATUS(mask_dev_.try_allocate(staged.size()));
  if (mask_out_dev_.bytes() < 2 * std::size_t(n) * 4) INFLIGHT_TRY_STATUS(mask_out_dev_.try_allocate(2 * std::size_t(n) * 4));
  INFLIGHT_CUDA_CHECK(cudaMemcpyAsync(mask_dev_.as(), staged.data(), staged.size(), cudaMemcpyHostToDevice, stream_));
  auto* out_tokens = mask_out_dev_.as<std::int32_t>();
  auto* out_logprobs = reinterpret_cast<float*>(out_tokens + n);
  INFLIGHT_TRY_STATUS(masked_greedy_sample(logits_.as<float>(), mask_dev_.as<std::int32_t>(), n, shape_.vocab_size,
                                           reinterpret_cast<const std::uint64_t*>(mask_dev_.as<std::byte>() + rows_bytes),
                                           words, out_tokens, out_logprobs, stream_));
  INFLIGHT_CUDA_CHECK(cudaMemcpyAsync(tokens, out_tokens, std::size_t(n) * 4, cudaMemcpyDeviceToHost, stream_));
  INFLIGHT_CUDA_CHECK(cudaMemcpyAsync(logprobs, out_logprobs, std::size_t(n) * 4, cudaMemcpyDeviceToHost, stream_));
  INFLIGHT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return status::ok();
}

status llama_runner::copy_logits(float* host, int num_logits) {
  if (num_logits > int(logit_rows_.size())) return bad_batch("copy_logits: more rows than the last step has");
  const std::size_t row_bytes = std::size_t(shape_.vocab_size) * sizeof(float);
  for (int k = 0; k < num_logits; ++k) {
    const auto* src = logits_.as<std::byte>() + std::size_t(logit_rows_[std::size_t(k)]) * row_bytes;
    INFLIGHT_CUDA_CHECK(cudaMemcpyAsync(host + std::int64_t(k) * shape_.vocab_size, src, row_bytes,
                                        cudaMemcpyDeviceToHost, stream_));
  }
  INFLIGHT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return status::ok();
}

}  // namespace inflight::kernels::cuda

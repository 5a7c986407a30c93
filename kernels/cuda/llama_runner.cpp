// llama_runner set-up: weight upload (fused QKV and gate/up), workspace, KV sizing.
#include "kernels/cuda/llama_runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "dtypes/dequantize.hpp"
#include "kernels/cuda/decode_split.hpp"
#include "kernels/cuda/fp8.hpp"

namespace inflight::kernels::cuda {
namespace {

constexpr std::size_t blas_workspace_bytes = 32u << 20;
constexpr std::int64_t staging_floats = 16ll << 20;
// Rows of a matrix in blocks dequantized at a time for a long step (64 MiB of bf16).
constexpr std::int64_t dequant_scratch_elems = 32ll << 20;
// Left free beside the KV cache for graphs, cuBLAS internals and the CUDA context's growth.
constexpr std::int64_t kv_reserve_bytes = 256ll << 20;

int round_up_to_graph_size(int n) {
  for (const int b : graph_batch_sizes) {
    if (n <= b) return b;
  }
  return n;
}

}  // namespace

llama_runner::llama_runner(const cpu::llama_shape& shape, const runner_options& options)
    : shape_(shape), options_(options) {
  block_table_stride_ = (options.max_context + options.block_size - 1) / options.block_size;
}

int llama_runner::decode_splits(int num_seqs) const {
  return decode_grid_splits(num_seqs, shape_.num_kv_heads, num_sms_);
}

llama_runner::~llama_runner() {
  destroy_graphs();
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void llama_runner::destroy_graphs() {
  for (auto& [size, exec] : graphs_) cudaGraphExecDestroy(exec);
  graphs_.clear();
}

status llama_runner::try_create(const cpu::llama_shape& shape, const cpu::llama_weights_view& weights,
                                const runner_options& options, std::unique_ptr<llama_runner>& out) {
  if (shape.head_dim % 2 != 0 || shape.head_dim > max_head_dim || shape.num_kv_heads <= 0 ||
      shape.num_heads % shape.num_kv_heads != 0) {
    return status::failure("cuda runner: head_dim must be even and <= 256, num_heads a multiple of num_kv_heads",
                           __FILE__, __LINE__);
  }
  if (options.block_size <= 0 || options.max_context <= 0 || options.max_num_seqs <= 0) {
    return status::failure("cuda runner: block_size, max_context and max_num_seqs must be > 0", __FILE__, __LINE__);
  }
  out.reset(new llama_runner(shape, options));
  llama_runner& r = *out;
  INFLIGHT_CUDA_CHECK(cudaSetDevice(options.device));
  INFLIGHT_CUDA_CHECK(cudaDeviceGetAttribute(&r.num_sms_, cudaDevAttrMultiProcessorCount, options.device));
  INFLIGHT_CUDA_CHECK(cudaStreamCreateWithFlags(&r.stream_, cudaStreamNonBlocking));
  INFLIGHT_TRY_STATUS(blas::try_create(r.stream_, blas_workspace_bytes, r.blas_));
  INFLIGHT_TRY_STATUS(r.upload(weights));
  capacity cap;
  cap.seqs = round_up_to_graph_size(options.max_num_seqs);
  cap.tokens = std::max(options.max_num_tokens, cap.seqs);
  INFLIGHT_TRY_STATUS(r.allocate_workspace(cap));
  return r.allocate_kv();
}

status llama_runner::upload_matrix(device_buffer& dst, std::int64_t offset, const float* src, std::int64_t n) {
  auto* base = dst.as<std::byte>() + offset * std::int64_t(dtype_bytes(options_.dt));
  for (std::int64_t done = 0; done < n; done += staging_floats) {
    const std::int64_t chunk = std::min(staging_floats, n - done);
    // Stream order keeps the next copy into the staging buffer behind this conversion.
    INFLIGHT_CUDA_CHECK(cudaMemcpyAsync(staging_.as(), src + done, std::size_t(chunk) * sizeof(float),
                                        cudaMemcpyHostToDevice, stream_));
    INFLIGHT_TRY_STATUS(convert_from_f32(options_.dt, base + done * std::int64_t(dtype_bytes(options_.dt)),
                                         staging_.as<float>(), chunk, stream_));
  }
  return status::ok();
}

status llama_runner::upload_matrix(device_buffer& dst, std::int64_t offset, const cpu::weight_view& src,
                                   std::int64_t rows, std::int64_t cols) {
  if (const float* floats = cpu::as_f32(src)) return upload_matrix(dst, offset, floats, rows * cols);
  // Decoded a slice of rows at a time: no whole fp32 copy of the matrix on the host.
  const std::int64_t slice = std::max<std::int64_t>(1, staging_floats / std::max<std::int64_t>(cols, 1));
  std::vector<float> floats(std::size_t(std::min(rows, slice) * cols));
  for (std::int64_t r = 0; r < rows; r += slice) {
    const std::int64_t count = std::min(slice, rows - r);
    for (std::int64_t i = 0; i < count; ++i) {
      dequantize(src.type, src.data + (r + i) * src.row_bytes, cols, floats.data() + i * cols);
    }
    INFLIGHT_TRY_STATUS(upload_matrix(dst, offset + r * cols, floats.data(), count * cols));
    INFLIGHT_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the slice is refilled next
  }
  return status::ok();
}

bool llama_runner::keeps_blocks(weight_dtype type) const {
  return options_.weights == weight_format::file && quant_matmul_supports(type);
}

status llama_runner::upload_linear(linear& dst, std::initializer_list<std::pair<cpu::weight_view, int>> matrices,
                                   int in, bool is_layer) {
  const std::int64_t el = std::int64_t(dtype_bytes(options_.dt));
  dst = linear{};
  dst.in = in;
  if (is_layer && options_.weights == weight_format::fp8 && in % 16 == 0) {
    linear_part part;
    INFLIGHT_TRY_STATUS(upload_fp8_part(part, matrices, in));
    weight_bytes_ += std::int64_t(part.data.bytes());
    dst.out = part.rows;
    dst.parts.push_back(std::move(part));
    max_fp8_in_ = std::max(max_fp8_in_, in);
    return status::ok();
  }
  // Consecutive matrices of one storage (dt, or one type's blocks) share a part.
  auto storage = [&](const cpu::weight_view& v) { return keeps_blocks(v.type) ? int(v.type) : -1; };
  const auto* begin = matrices.begin();
  while (begin != matrices.end()) {
    const int key = storage(begin->first);
    const auto* end = begin;
    int rows = 0;
    while (end != matrices.end() && storage(end->first) == key) rows += (end++)->second;
    linear_part part;
    part.rows = rows;
    part.out_offset = dst.out;
    part.kind = key < 0 ? part_kind::dense : part_kind::blocks;
    if (part.kind == part_kind::dense) {
      INFLIGHT_TRY_STATUS(part.data.try_allocate(std::size_t(std::int64_t(rows) * in * el)));
      std::int64_t row = 0;
      for (const auto* m = begin; m != end; ++m) {
        INFLIGHT_TRY_STATUS(upload_matrix(part.data, row * in, m->first, m->second, in));
        row += m->second;
      }
    } else {
      const auto type = weight_dtype(key);
      const std::int64_t rb = row_bytes(type, in);
      INFLIGHT_TRY_STATUS(part.data.try_allocate(std::size_t(rb * rows)));
      std::int64_t row = 0;
      for (const auto* m = begin; m != end; ++m) {
        auto* to = part.data.as<std::byte>() + row * rb;
        // The blocks as they lie in the file (the weights outlive the upload's last sync).
        INFLIGHT_CUDA_CHECK(cudaMemcpy2DAsync(to, std::size_t(rb), m->first.data, std::size_t(m->first.row_bytes),
                                              std::size_t(rb), std::size_t(m->second), cudaMemcpyHostToDevice,
                                              stream_));
        row += m->second;
      }
      part.blocks = quant_matrix{type, part.data.as<std::byte>(), rb, rows, in};
      uses_format_[int(cpu::input_of(type))] = true;
      max_blocks_in_ = std::max(max_blocks_in_, in);
      max_blocks_elems_ = std::max(max_blocks_elems_, std::int64_t(rows) * in);
    }
    weight_bytes_ += std::int64_t(part.data.bytes());
    dst.out += rows;
    dst.parts.push_back(std::move(part));
    begin = end;
  }
  return status::ok();
}

status llama_runner::upload_fp8_part(linear_part& part,
                                     std::initializer_list<std::pair<cpu::weight_view, int>> matrices, int in) {
  // Two passes over each matrix's rows, a slice at a time: the largest magnitude of them
  // all (on the host), then the conversion with the one scale (on the device).
  const std::int64_t slice_rows = std::max<std::int64_t>(1, staging_floats / in);
  std::vector<float> floats;
  auto for_slices = [&](const std::pair<cpu::weight_view, int>& m, auto&& f) -> status {
    for (std::int64_t r = 0; r < m.second; r += slice_rows) {
      const std::int64_t count = std::min<std::int64_t>(slice_rows, m.second - r);
      const float* values = cpu::as_f32(m.first) != nullptr ? cpu::as_f32(m.first) + r * in : nullptr;
      if (values == nullptr) {
        floats.resize(std::size_t(count * in));
        for (std::int64_t i = 0; i < count; ++i) {
          dequantize(m.first.type, m.first.data + (r + i) * m.first.row_bytes, in, floats.data() + i * in);
        }
        values = floats.data();
      }
      INFLIGHT_TRY_STATUS(f(values, r, count));
    }
    return status::ok();
  };
  float amax = 0.0f;
  int rows = 0;
  for (const auto& m : matrices) {
    rows += m.second;
    INFLIGHT_TRY_STATUS(for_slices(m, [&](const float* v, std::int64_t, std::int64_t count) {
      for (std::int64_t i = 0; i < count * in; ++i) amax = std::max(amax, std::fabs(v[i]));
      return status::ok();
    }));
  }
  const float scale = amax > 0.0f ? amax / 448.0f : 1.0f;  // fp8.hpp's rule
  part.kind = part_kind::fp8;
  part.rows = rows;
  INFLIGHT_TRY_STATUS(part.data.try_allocate(std::size_t(rows) * std::size_t(in)));
  INFLIGHT_TRY_STATUS(part.scale.try_allocate(sizeof(float)));
  INFLIGHT_CUDA_CHECK(cudaMemcpyAsync(part.scale.as(), &scale, sizeof(float), cudaMemcpyHostToDevice, stream_));
  std::int64_t row = 0;
  for (const auto& m : matrices) {
    INFLIGHT_TRY_STATUS(for_slices(m, [&](const float* v, std::int64_t r, std::int64_t count) {
      for (std::int64_t done = 0; done < count * in; done += staging_floats) {
        const std::int64_t chunk = std::min(staging_floats, count * in - done);
        INFLIGHT_CUDA_CHECK(cudaMemcpyAsync(staging_.as(), v + done, std::size_t(chunk) * sizeof(float),
                                            cudaMemcpyHostToDevice, stream_));
        INFLIGHT_TRY_STATUS(to_fp8(fp8_source::f32, staging_.as(), chunk, part.scale.as<float>(),
                                   part.data.as<std::uint8_t>() + (row + r) * in + done, stream_));
      }
      // The slice buffer and `scale` are refilled or leave scope next.
      INFLIGHT_CUDA_CHECK(cudaStreamSynchronize(stream_));
      return status::ok();
    }));
    row += m.second;
  }
  return status::ok();
}

namespace {

status upload_floats(device_buffer& dst, const float* src, std::int64_t n, cudaStream_t stream) {
  INFLIGHT_TRY_STATUS(dst.try_allocate(std::size_t(n) * sizeof(float)));
  INFLIGHT_CUDA_CHECK(cudaMemcpyAsync(dst.as(), src, std::size_t(n) * sizeof(float), cudaMemcpyHostToDevice, stream));
  return status::ok();
}

}  // namespace

status llama_runner::upload(const cpu::llama_weights_view& w) {
  const int d = shape_.dim, h = shape_.hidden_dim, qd = shape_.num_heads * shape_.head_dim;
  const int kvd = shape_.num_kv_heads * shape_.head_dim;
  INFLIGHT_TRY_STATUS(staging_.try_allocate(std::size_t(staging_floats) * sizeof(float)));
  INFLIGHT_TRY_STATUS(upload_linear(embedding_, {{w.token_embedding, shape_.vocab_size}}, d, false));
  is_tied_ = w.classifier.data == w.token_embedding.data;
  if (!is_tied_) INFLIGHT_TRY_STATUS(upload_linear(classifier_, {{w.classifier, shape_.vocab_size}}, d, false));
  INFLIGHT_TRY_STATUS(upload_floats(final_norm_, w.final_norm, d, stream_));
  std::vector<float> inv_freq(std::size_t(shape_.head_dim / 2));
  for (int j = 0; j < shape_.head_dim / 2; ++j) inv_freq[std::size_t(j)] = cpu::rope_inv_freq(j, shape_);
  INFLIGHT_TRY_STATUS(upload_floats(inv_freq_, inv_freq.data(), std::int64_t(inv_freq.size()), stream_));
  // The pageable source of inv_freq must outlive its copy.
  INFLIGHT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  layers_.resize(std::size_t(shape_.num_layers));
  for (int l = 0; l < shape_.num_layers; ++l) {
    const auto& src = w.layers[l];
    auto& dst = layers_[std::size_t(l)];
    INFLIGHT_TRY_STATUS(upload_floats(dst.attn_norm, src.attn_norm, d, stream_));
    INFLIGHT_TRY_STATUS(upload_floats(dst.ffn_norm, src.ffn_norm, d, stream_));
    INFLIGHT_TRY_STATUS(upload_linear(dst.wqkv, {{src.wq, qd}, {src.wk, kvd}, {src.wv, kvd}}, d, true));
    if (src.bq != nullptr || src.bk != nullptr || src.bv != nullptr) {
      std::vector<float> bias(std::size_t(qd + 2 * kvd), 0.0f);
      if (src.bq != nullptr) std::copy_n(src.bq, qd, bias.begin());
      if (src.bk != nullptr) std::copy_n(src.bk, kvd, bias.begin() + qd);
      if (src.bv != nullptr) std::copy_n(src.bv, kvd, bias.begin() + qd + kvd);
      INFLIGHT_TRY_STATUS(upload_floats(dst.bqkv, bias.data(), std::int64_t(bias.size()), stream_));
      INFLIGHT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    if (src.q_norm != nullptr) {
      INFLIGHT_TRY_STATUS(upload_floats(dst.q_norm, src.q_norm, shape_.head_dim, stream_));
      INFLIGHT_TRY_STATUS(upload_floats(dst.k_norm, src.k_norm, shape_.head_dim, stream_));
    }
    INFLIGHT_TRY_STATUS(upload_linear(dst.wo, {{src.wo, d}}, qd, true));
    INFLIGHT_TRY_STATUS(upload_linear(dst.w_gate_up, {{src.w_gate, h}, {src.w_up, h}}, d, true));
    INFLIGHT_TRY_STATUS(upload_linear(dst.w_down, {{src.w_down, d}}, h, true));
  }
  INFLIGHT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  staging_.reset();
  return status::ok();
}

llama_runner::batch_layout llama_runner::layout() const {
  batch_layout b;
  b.ids = 0;
  b.positions = b.ids + cap_.tokens;
  b.slots = b.positions + cap_.tokens;
  b.logit_rows = b.slots + cap_.tokens;
  b.query_start = b.logit_rows + cap_.seqs;
  b.tiles = b.query_start + cap_.seqs + 1;
  b.params = b.tiles + 3ll * cap_.tiles;
  b.decode_seqs = b.params + 4;
  b.tables = b.decode_seqs + cap_.seqs;
  b.size = b.tables + std::int64_t(cap_.seqs) * block_table_stride_;
  return b;
}

status llama_runner::allocate_workspace(capacity cap) {
  destroy_graphs();  // they read the old addresses
  cap.tiles = cap.tokens / prefill_tile_tokens + cap.seqs;
  cap_ = cap;
  const std::size_t el = dtype_bytes(options_.dt), t = std::size_t(cap.tokens), s = std::size_t(cap.seqs);
  const std::size_t d = std::size_t(shape_.dim), h = std::size_t(shape_.hidden_dim);
  const std::size_t qd = std::size_t(shape_.num_heads) * std::size_t(shape_.head_dim);
  INFLIGHT_TRY_STATUS(x_.try_allocate(t * d * sizeof(float)));
  INFLIGHT_TRY_STATUS(xb_.try_allocate(t * d * el));
  INFLIGHT_TRY_STATUS(qkv_.try_allocate(t * std::size_t(qkv_dim()) * el));
  INFLIGHT_TRY_STATUS(attn_.try_allocate(t * qd * el));
  INFLIGHT_TRY_STATUS(delta_.try_allocate(t * d * el));
  INFLIGHT_TRY_STATUS(gate_up_.try_allocate(t * 2 * h * el));
  INFLIGHT_TRY_STATUS(hidden_.try_allocate(t * h * el));
  INFLIGHT_TRY_STATUS(logits_in_.try_allocate(s * d * el));
  INFLIGHT_TRY_STATUS(logits_.try_allocate(s * std::size_t(shape_.vocab_size) * sizeof(float)));
  // Decode steps of up to cap.seqs sequences, graphs padded to a batch size included.
  partial_seq_splits_ = 0;
  for (int n = 1; n <= cap.seqs; ++n) {
    partial_seq_splits_ = std::max(partial_seq_splits_, std::int64_t(n) * decode_splits(n));
  }
  const auto num_partials = decode_partials_floats(int(partial_seq_splits_), shape_.num_heads, shape_.head_dim, 1);
  INFLIGHT_TRY_STATUS(partials_.try_allocate(std::size_t(num_partials) * sizeof(float)));
  for (int f = 0; f < cpu::num_input_formats; ++f) {
    if (!uses_format_[f]) continue;
    const auto row = cpu::prepared_row_bytes(cpu::input_format(f), max_blocks_in_);
    INFLIGHT_TRY_STATUS(prepared_[f].try_allocate(t * std::size_t(row)));
  }
  if (max_fp8_in_ > 0) {
    INFLIGHT_TRY_STATUS(act_fp8_.try_allocate(t * std::size_t(max_fp8_in_)));
    INFLIGHT_TRY_STATUS(act_fp8_scale_.try_allocate(2 * sizeof(float)));
  }
  if (max_blocks_elems_ > 0 && cap.tokens >= quant_gemm_min_tokens) {
    INFLIGHT_TRY_STATUS(dequant_scratch_.try_allocate(std::size_t(std::min(max_blocks_elems_, dequant_scratch_elems)) * el));
  }
  INFLIGHT_TRY_STATUS(sampled_tokens_.try_allocate(s * sizeof(std::int32_t)));
  INFLIGHT_TRY_STATUS(sampled_logprobs_.try_allocate(s * sizeof(float)));
  INFLIGHT_TRY_STATUS(results_host_.try_allocate(2 * s * sizeof(float), true));
  const auto batch_ints = std::size_t(layout().size);
  INFLIGHT_TRY_STATUS(batch_dev_.try_allocate(batch_ints * sizeof(std::int32_t)));
  INFLIGHT_TRY_STATUS(batch_host_.try_allocate(batch_ints * sizeof(std::int32_t), true));
  return status::ok();
}

status llama_runner::allocate_kv() {
  const std::int64_t per_block = std::int64_t(options_.block_size) * shape_.num_kv_heads * shape_.head_dim *
                                 std::int64_t(dtype_bytes(options_.dt)) * 2 * shape_.num_layers;
  std::int64_t num_blocks = options_.num_kv_blocks;
  if (num_blocks <= 0) {
    std::size_t free_bytes = 0, total_bytes = 0;
    INFLIGHT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const auto held_elsewhere = double(total_bytes) * (1.0 - options_.gpu_memory_utilization);
    const auto budget = std::int64_t(double(free_bytes) - held_elsewhere) - kv_reserve_bytes;
    num_blocks = per_block > 0 ? budget / per_block - 1 : 0;  // one block is the padding rows' scratch
    if (num_blocks <= 0) {
      return status::failure("cuda runner: gpu_memory_utilization " + std::to_string(options_.gpu_memory_utilization) +
                                 " leaves no memory for the KV cache (" + std::to_string(free_bytes >> 20) +
                                 " MiB free of " + std::to_string(total_bytes >> 20) + " MiB after the weights)",
                             __FILE__, __LINE__);
    }
  }
  num_blocks_ = int(std::min<std::int64_t>(num_blocks, 1ll << 30));
  INFLIGHT_TRY_STATUS(kv_.try_allocate(std::size_t(num_blocks_ + 1) * std::size_t(per_block)));
  // Zeroed so that never-written slots hold finite values.
  INFLIGHT_CUDA_CHECK(cudaMemsetAsync(kv_.as(), 0, kv_.bytes(), stream_));
  INFLIGHT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return status::ok();
}

}  // namespace inflight::kernels::cuda

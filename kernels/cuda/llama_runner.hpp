#pragma once
/// The Llama forward pass on one CUDA device: bf16/fp16 weights with fused QKV and
/// gate/up projections, a paged KV cache sized from the free device memory, the step
/// workspace, and CUDA graphs of decode-only steps at padded batch sizes.
/// Raw host arrays in (kernels/cpu's views), no engine types.
///
/// Device batch buffer (int32, fixed offsets so a captured graph reads the same
/// addresses every step; one host-to-device copy per step):
///
///   | token_ids | positions | slots | logit_rows | query_start | tiles (3 per tile) | params | decode_seqs | block tables [seqs x stride] |
///     cap_tokens  cap_tokens  cap_tok  cap_seqs     cap_seqs+1    3*cap_tiles          4        cap_seqs      copied up to the used rows
///
/// params[0] is the decode split size of the step (decode_split.hpp); decode_seqs lists
/// the one-token sequences of a mixed step (they run in the decode kernel).
///
/// KV cache: per layer K then V, each [num_blocks + 1][block_size][num_kv_heads][head_dim];
/// the extra last block absorbs the K/V writes of the padding rows of a graph batch.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <initializer_list>
#include <span>
#include <utility>
#include <vector>

#include "kernels/cpu/llama.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/gemm.hpp"
#include "kernels/cuda/kernels.hpp"
#include "kernels/cuda/quant_matmul.hpp"

namespace inflight::kernels::cuda {

/// How weight matrices lie on the device.
enum class weight_format {
  /// Every matrix in dt (bf16 / fp16), whatever its type in the file.
  expand,
  /// q8_0, q4_0, q4_k and q6_k matrices in their GGUF blocks (quant_matmul.hpp: no
  /// expanded copy anywhere); other types in dt.
  file,
  /// The layers' matrices in FP8 E4M3 with one scale per product (fp8.hpp; the fused
  /// q/k/v and gate/up share theirs), products through cuBLASLt with the step's
  /// activations quantized per tensor; the embedding and the classifier in dt. A product
  /// whose input width is not a multiple of 16 stays in dt.
  fp8,
};

/// Steps of fewer tokens than this multiply a matrix in blocks with quant_gemv (8 tokens
/// a launch, the matrix read once per launch); longer ones dequantize rows into a scratch
/// and use cuBLAS. A guess from bytes read (quant_gemv reads about 0.56 bytes a q4_k
/// weight per 8 tokens, dequantize + GEMM about 4.6), not measured on a GPU yet.
inline constexpr int quant_gemm_min_tokens = 65;

struct runner_options {
  dtype dt = dtype::bf16;
  int device = 0;
  int block_size = 16;
  int num_kv_blocks = 0;                ///< > 0: exactly this many; else from the memory left
  double gpu_memory_utilization = 0.9;  ///< share of the device's memory the process may hold
  int max_context = 4096;               ///< every position is below this
  int max_num_seqs = 64;                ///< sequences per step (more grows the workspace)
  int max_num_tokens = 512;             ///< tokens per step (more grows the workspace)
  bool use_graphs = true;
  decode_kernel decode = decode_kernel::grouped;
  prefill_kernel prefill = prefill_kernel::mma;
  weight_format weights = weight_format::expand;
};

/// Padded batch sizes of the decode graphs.
inline constexpr int graph_batch_sizes[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};

class llama_runner {
 public:
  /// Uploads `weights` (f32 matrices converted on the device; with weight_format::file,
  /// the matrices quant_matmul reads as they are; any other type decoded a slice at a
  /// time on the host), allocates the workspace, then the KV cache.
  static status try_create(const cpu::llama_shape& shape, const cpu::llama_weights_view& weights,
                           const runner_options& options, std::unique_ptr<llama_runner>& out);
  ~llama_runner();
  llama_runner(const llama_runner&) = delete;
  llama_runner& operator=(const llama_runner&) = delete;

  /// Runs one step: every layer over the batch, K/V written into the cache, logits for
  /// batch.logit_indices, and greedy sampling of them: tokens[k] and logprobs[k] for
  /// logit row k (host arrays of batch.num_logits). The logits stay on the device.
  /// The named rows (batch.row_logit_ids) go to row_logits[num_row_logits] on the host;
  /// a step with named rows never replays a graph.
  status forward(const cpu::ragged_batch_view& batch, std::int32_t* tokens, float* logprobs,
                 float* row_logits = nullptr);
  /// Copies the logits rows of the last forward ([num_logits x vocab] fp32) to `host`.
  status copy_logits(float* host, int num_logits);
  /// Greedy sampling of logit rows ks[j] of the last forward under grammar masks
  /// (host memory, `words` 64-bit words per row, row j at masks + j * words), on the
  /// device: tokens[j] and logprobs[j] come back, not the rows (kernels.hpp:
  /// masked_greedy_sample).
  status masked_greedy(std::span<const int> ks, const std::uint64_t* masks, int words, std::int32_t* tokens,
                       float* logprobs);

  int num_kv_blocks() const { return num_blocks_; }
  int block_size() const { return options_.block_size; }
  int max_context() const { return options_.max_context; }
  /// Whether the last forward replayed a CUDA graph.
  bool last_used_graph() const { return last_used_graph_; }
  /// Bytes of device memory of the KV cache.
  std::int64_t kv_bytes() const { return std::int64_t(kv_.bytes()); }
  /// Bytes of device memory of the weight matrices (the embedding and classifier included).
  std::int64_t weight_bytes() const { return weight_bytes_; }

 private:
  /// Consecutive row ranges of one product's output (a fused projection) that share a
  /// storage: dt rows for cuBLAS, or one type's blocks.
  enum class part_kind { dense, blocks, fp8 };
  struct linear_part {
    part_kind kind = part_kind::dense;
    quant_matrix blocks;  ///< blocks: the rows, data in `data`
    int rows = 0, out_offset = 0;
    device_buffer data;
    device_buffer scale;  ///< fp8: the matrix's scale (a device float)
  };
  struct linear {
    std::vector<linear_part> parts;
    int in = 0, out = 0;
  };
  struct layer_buffers {
    device_buffer attn_norm, ffn_norm, bqkv, q_norm, k_norm;
    linear wqkv, wo, w_gate_up, w_down;
  };
  struct capacity {
    int tokens = 0, seqs = 0, tiles = 0;
  };

  /// Offsets (in int32) of the sections of the batch buffer at the current capacity.
  struct batch_layout {
    std::int64_t ids, positions, slots, logit_rows, query_start, tiles, params, decode_seqs, tables, size;
  };

  llama_runner(const cpu::llama_shape& shape, const runner_options& options);
  batch_layout layout() const;
  status ensure_capacity(int num_tokens, int num_seqs);
  status upload(const cpu::llama_weights_view& weights);
  status upload_matrix(device_buffer& dst, std::int64_t offset, const float* src, std::int64_t n);
  /// The same from a typed view of `rows` rows of `cols`: f32 converted, other types
  /// decoded a slice at a time on the host.
  status upload_matrix(device_buffer& dst, std::int64_t offset, const cpu::weight_view& src, std::int64_t rows,
                       std::int64_t cols);
  /// A product's matrices, stacked by output rows in this order (each [rows x in]).
  /// `is_layer`: a layer's projection (weight_format::fp8 applies), not the embedding or
  /// the classifier.
  status upload_linear(linear& dst, std::initializer_list<std::pair<cpu::weight_view, int>> matrices, int in,
                       bool is_layer);
  /// The matrices as one FP8 part with one scale (the largest magnitude of them all).
  status upload_fp8_part(linear_part& part, std::initializer_list<std::pair<cpu::weight_view, int>> matrices, int in);
  /// Whether a matrix of this type stays in its blocks.
  bool keeps_blocks(weight_dtype type) const;
  /// y[n x out] (ldy = out) = x[n x in] * W^T over every part.
  status run_linear(const linear& w, const void* x, int n, void* y, bool y_f32);
  /// x[t] = embedding row ids[t] (fp32).
  status gather_embedding(const std::int32_t* ids, int n);
  status allocate_workspace(capacity cap);
  status allocate_kv();
  status check_batch(const cpu::ragged_batch_view& batch) const;
  status stage_batch(const cpu::ragged_batch_view& batch, int padded_seqs);
  status run_device(int num_tokens, int num_seqs, int num_tiles, int num_logits, bool is_decode);
  status run_layer(int l, int n, int num_seqs, int num_tiles, bool is_decode);
  status launch_graph(int padded_seqs);
  status run_row_logits(const cpu::ragged_batch_view& batch, float* host_out);
  void destroy_graphs();
  /// Splits of the decode grid for a step of num_seqs sequences (graphs: padded).
  int decode_splits(int num_seqs) const;
  int qkv_dim() const { return (shape_.num_heads + 2 * shape_.num_kv_heads) * shape_.head_dim; }

  cpu::llama_shape shape_;
  runner_options options_;
  cudaStream_t stream_ = nullptr;
  blas blas_;
  // Weights.
  linear embedding_, classifier_;
  device_buffer final_norm_, inv_freq_, staging_;
  std::int64_t weight_bytes_ = 0;
  // Products in blocks: the step's inputs prepared per format, and the rows of a matrix
  // dequantized for a long step (allocated with the workspace).
  bool uses_format_[cpu::num_input_formats] = {};
  int max_blocks_in_ = 0;                 ///< the widest input of a product in blocks
  std::int64_t max_blocks_elems_ = 0;     ///< the largest part in blocks (rows x in)
  device_buffer prepared_[cpu::num_input_formats], dequant_scratch_, row_weights_dev_;
  // FP8 products: the widest input, and a step's activations as E4M3 with their scale.
  int max_fp8_in_ = 0;
  device_buffer act_fp8_, act_fp8_scale_;
  std::vector<layer_buffers> layers_;
  bool is_tied_ = true;
  // KV cache.
  device_buffer kv_;
  int num_blocks_ = 0;
  int block_table_stride_ = 0;
  // Workspace.
  capacity cap_;
  device_buffer x_, xb_, qkv_, attn_, delta_, gate_up_, hidden_, logits_in_, logits_, partials_;
  device_buffer sampled_tokens_, sampled_logprobs_, batch_dev_, batch_host_, results_host_;
  // Named logit rows: | scored token indices | pair positions | pair row ids | and the values.
  device_buffer rows_dev_, row_logits_dev_;
  device_buffer mask_dev_, mask_out_dev_;  ///< masked_greedy: row ids and masks in, tokens and logprobs out
  std::vector<std::int32_t> rows_host_;
  std::int64_t partial_seq_splits_ = 0;  ///< (sequence, split) pairs the partials hold
  int num_sms_ = 1;
  // The staged step.
  std::vector<int> logit_rows_;  ///< device logits row of each requested logit
  int staged_tiles_ = 0;
  int staged_decode_rows_ = 0;  ///< one-token sequences of a mixed step (decode_seqs)
  bool last_used_graph_ = false;
  std::map<int, cudaGraphExec_t> graphs_;
};

}  // namespace inflight::kernels::cuda

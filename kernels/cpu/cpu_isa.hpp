#pragma once
/// The vector kernels of the CPU forward pass, one table per instruction set, chosen at
/// run time: the build targets baseline x86-64, and AVX2 / AVX-512 code lives in files
/// compiled for those sets, reached only through this table after a CPU check. Within a
/// table, the products vary by weight type (weight_types.hpp): table.weights[type].
///
/// Every kernel computes each output element with the same sequence of operations
/// whatever the batch, the tile it falls in or the thread that runs it, so a token's
/// results do not depend on what else is in its step (batch invariance). Different
/// tables may round differently from each other.

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/weight_types.hpp"

namespace inflight::kernels::cpu {

/// portable: any CPU. avx2: AVX2, FMA, F16C. avx512: AVX-512 F, VL, DQ, BW (and avx2).
/// avx512_vnni: avx512 plus AVX-512 VNNI and BF16 (integer and bf16 dot products).
enum class cpu_isa { portable, avx2, avx512, avx512_vnni };
inline constexpr int num_cpu_isas = 4;

/// The widest instruction set this CPU and OS support (checked once).
cpu_isa detect_cpu_isa();
/// "portable" | "avx2" | "avx512" | "avx512_vnni".
const char* to_string(cpu_isa isa);
/// True when this machine can run kernels for `isa`.
bool can_run(cpu_isa isa);

/// y[t][o] = (accumulate ? y[t][o] : 0) + sum_k x[t][k] * w[o][k] for t < n, o in
/// [row_begin, row_end): one slice of a linear layer with row-major f32 weights [out x k].
struct gemm_args {
  const float* x = nullptr;
  std::int64_t ldx = 0;
  const float* w = nullptr;
  std::int64_t ldw = 0;
  float* y = nullptr;
  std::int64_t ldy = 0;
  int n = 0;
  int k = 0;
  bool accumulate = false;
};

/// The same product over weights of any type: x holds n input rows prepared in the
/// weight type's input format (row t at x + t * ldx bytes; for f32 weights the f32 rows
/// themselves), k a whole number of the type's blocks.
struct typed_gemm_args {
  const std::byte* x = nullptr;
  std::int64_t ldx = 0;  ///< bytes
  weight_view w;
  float* y = nullptr;
  std::int64_t ldy = 0;  ///< floats
  int n = 0;
  int k = 0;
  bool accumulate = false;
};

/// Queries an attention kernel takes at once (sharing each key and value it loads).
inline constexpr int attention_tile = 4;

/// Causal attention of one query head for `num_queries` consecutive tokens of one
/// sequence over its paged KV: query i sees the keys at positions 0..num_keys-1+i, or
/// with a window w only the last w of them. Each query's result is the same bits
/// whatever the other queries of the call.
struct attention_args {
  const float* q = nullptr;          ///< query i's head at q + i * q_stride, [head_dim]
  std::int64_t q_stride = 0;
  int num_queries = 1;
  /// The KV head's region of a layer's cache (llama.hpp's paged_kv_view): the key of
  /// position p at element (block_table[p / block_size] * block_size + p % block_size) * head_dim.
  const std::byte* k_cache = nullptr;
  const std::byte* v_cache = nullptr;
  kv_type type = kv_type::f32;
  const std::int32_t* block_table = nullptr;
  int block_size = 0;
  int num_keys = 0;                  ///< keys of the first query
  int head_dim = 0;
  float scale = 1.0f;
  int window = 0;                    ///< keys a query reads, itself included; 0: all
  float softcap = 0.0f;              ///< scores become softcap * tanh(s / softcap); 0: none
  /// A learned logit that joins the softmax's denominator (gpt-oss's sinks): the weights
  /// are exp(s_p - m) / (sum exp(s - m) + exp(sink - m)), m the max of both; -inf: none.
  float sink = -__builtin_inff();
  float* scores = nullptr;           ///< scratch of attention_tile * (num_keys + num_queries) floats
  float* out = nullptr;              ///< query i's output at out + i * out_stride, [head_dim]
  std::int64_t out_stride = 0;
};

/// The products over one weight type.
struct weight_kernels {
  /// One slice of rows of a linear layer (see typed_gemm_args).
  void (*gemm)(const typed_gemm_args& a, int row_begin, int row_end) = nullptr;
  /// out[0..k) = the values of one row of k values (a whole number of blocks).
  void (*dequantize_row)(const std::byte* row, std::int64_t k, float* out) = nullptr;  // dtypes/dequantize.hpp's
};

/// Prepares columns [col_begin, col_end) (whole blocks of the format's scales: 32 values
/// for q8_0, 256 for q8_k) of n input rows of k floats (row t at x + t * ldx) into one
/// input format (row t at out + t * ld_out bytes, ld_out >= prepared_row_bytes(format, k)).
struct prepare_args {
  const float* x = nullptr;
  std::int64_t ldx = 0;  ///< floats
  int n = 0;
  std::int64_t k = 0;
  std::int64_t col_begin = 0;
  std::int64_t col_end = 0;
  std::byte* out = nullptr;
  std::int64_t ld_out = 0;  ///< bytes
};
using prepare_inputs_fn = void (*)(const prepare_args& a);
/// Converts n floats into one row of the KV cache.
using store_kv_fn = void (*)(std::byte* dst, const float* src, int n);

struct cpu_kernel_table {
  cpu_isa isa = cpu_isa::portable;
  /// One slice of rows of an f32 linear layer (see gemm_args).
  void (*gemm)(const gemm_args& a, int row_begin, int row_end) = nullptr;
  /// Causal softmax attention of one query head over its sequence's keys.
  void (*attention)(const attention_args& a) = nullptr;
  /// out = w * x / rms(x) over one row of `dim`.
  void (*rmsnorm_row)(float* out, const float* x, const float* w, int dim, float eps) = nullptr;
  /// gate[i] = silu(gate[i]) * up[i].
  void (*silu_mul)(float* gate, const float* up, int n) = nullptr;
  /// gate[i] = gelu(gate[i]) * up[i], GELU's tanh approximation (GeGLU).
  void (*gelu_mul)(float* gate, const float* up, int n) = nullptr;
  /// gpt-oss: g = min(gate, 7), u = clamp(up, -7, 7), gate[i] = g sigmoid(1.702 g) (u + 1).
  void (*swiglu_oai_mul)(float* gate, const float* up, int n) = nullptr;
  /// Products and row conversion per weight type (index: weight_type).
  weight_kernels weights[num_weight_types] = {};
  /// Input preparation per input format (index: input_format); f32's is a copy.
  prepare_inputs_fn prepare[num_input_formats] = {};
  /// Converts n floats into one row of the KV cache (index: kv_type).
  store_kv_fn store_kv[num_kv_types] = {};
};

/// The table for `isa`; the caller checks can_run(isa) first.
const cpu_kernel_table& kernels_for(cpu_isa isa);

/// y (+)= x W^T over rows [row_begin, row_end) of any weight type, through `table`.
void typed_gemm(const cpu_kernel_table& table, const typed_gemm_args& a, int row_begin, int row_end);

// Defined in their own files, compiled for their instruction set.
const cpu_kernel_table& portable_kernels();
const cpu_kernel_table& avx2_kernels();
const cpu_kernel_table& avx512_kernels();
const cpu_kernel_table& avx512_vnni_kernels();

}  // namespace inflight::kernels::cpu

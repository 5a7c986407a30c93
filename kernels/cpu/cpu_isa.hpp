#pragma once
/// The vector kernels of the CPU forward pass, one table per instruction set, chosen at
/// run time: the build targets baseline x86-64, and AVX2 / AVX-512 code lives in files
/// compiled for those sets, reached only through this table after a CPU check.
///
/// Every kernel computes each output element with the same sequence of operations
/// whatever the batch, the tile it falls in or the thread that runs it, so a token's
/// results do not depend on what else is in its step (batch invariance). Different
/// tables may round differently from each other.

#include <cstdint>

namespace inflight::kernels::cpu {

enum class cpu_isa { portable, avx2, avx512 };

/// The widest instruction set this CPU and OS support (checked once).
cpu_isa detect_cpu_isa();
/// "portable" | "avx2" | "avx512".
const char* to_string(cpu_isa isa);
/// True when this machine can run kernels for `isa`.
bool can_run(cpu_isa isa);

/// y[t][o] = (accumulate ? y[t][o] : 0) + sum_k x[t][k] * w[o][k] for t < n, o in
/// [row_begin, row_end): one slice of a linear layer with row-major weights [out x k].
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

/// The paged KV of one attention head of one sequence, as the attention kernel reads it.
struct attention_args {
  const float* q = nullptr;          ///< [head_dim], one query head
  const float* k_cache = nullptr;    ///< layer base; row `slot` at k_cache + slot * kv_dim + head_offset
  const float* v_cache = nullptr;
  std::int64_t kv_dim = 0;
  std::int64_t head_offset = 0;
  const std::int32_t* block_table = nullptr;
  int block_size = 0;
  int num_keys = 0;                  ///< keys at positions 0..num_keys-1
  int head_dim = 0;
  float scale = 1.0f;
  float* scores = nullptr;           ///< scratch of at least num_keys floats
  float* out = nullptr;              ///< [head_dim]
};

struct cpu_kernel_table {
  cpu_isa isa = cpu_isa::portable;
  /// One slice of rows of a linear layer (see gemm_args).
  void (*gemm)(const gemm_args& a, int row_begin, int row_end) = nullptr;
  /// Causal softmax attention of one query head over its sequence's keys.
  void (*attention)(const attention_args& a) = nullptr;
  /// out = w * x / rms(x) over one row of `dim`.
  void (*rmsnorm_row)(float* out, const float* x, const float* w, int dim, float eps) = nullptr;
  /// gate[i] = silu(gate[i]) * up[i].
  void (*silu_mul)(float* gate, const float* up, int n) = nullptr;
};

/// The table for `isa`; the caller checks can_run(isa) first.
const cpu_kernel_table& kernels_for(cpu_isa isa);

// Defined in their own files, compiled for their instruction set.
const cpu_kernel_table& portable_kernels();
const cpu_kernel_table& avx2_kernels();
const cpu_kernel_table& avx512_kernels();

}  // namespace inflight::kernels::cpu

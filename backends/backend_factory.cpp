#include "backends/backend_factory.hpp"

#include "backends/cpu_backend.hpp"
#ifdef INFLIGHT_HAS_CUDA
#include "backends/cuda_backend.hpp"
#endif

namespace inflight {

bool has_cuda_backend() {
#ifdef INFLIGHT_HAS_CUDA
  return true;
#else
  return false;
#endif
}

cpu_backend_options cpu_options_of(const engine_settings& s) {
  cpu_backend_options options;
  if (s.kv_dtype == "f16") options.kv_type = kernels::cpu::kv_type::f16;
  if (s.kv_dtype == "bf16") options.kv_type = kernels::cpu::kv_type::bf16;
  options.num_threads = s.threads;
  options.pin_threads = s.pin_threads;
  return options;
}

result<std::unique_ptr<backend>> make_backend(const engine_settings& s, std::shared_ptr<const model_weights> weights) {
  if (s.backend == "cuda") {
    if (s.kv_dtype != "auto") {
      return make_error(errc::invalid_argument, "engine.kv_dtype = \"" + s.kv_dtype +
                                                    "\": the cuda backend keeps its KV cache in model.dtype; "
                                                    "leave engine.kv_dtype at \"auto\"");
    }
#ifdef INFLIGHT_HAS_CUDA
    cuda_backend_options o;
    o.block_size = s.block_size;
    o.num_kv_blocks = s.kv_blocks;
    o.gpu_memory_utilization = s.gpu_memory_utilization;
    o.max_num_seqs = s.max_num_seqs;
    o.max_num_batched_tokens = s.max_num_batched_tokens;
    using kernels::cuda::decode_kernel;
    using kernels::cuda::prefill_kernel;
    o.decode_attention = s.cuda_decode_attention == "per_head" ? decode_kernel::per_head
                         : s.cuda_decode_attention == "mma"    ? decode_kernel::mma
                                                               : decode_kernel::grouped;
    o.prefill_attention = s.cuda_prefill_attention == "tiled" ? prefill_kernel::tiled : prefill_kernel::mma;
    o.device_grammar_mask = s.cuda_grammar_mask == "device";
    o.weights = s.cuda_weights == "file"  ? kernels::cuda::weight_format::file
                : s.cuda_weights == "fp8" ? kernels::cuda::weight_format::fp8
                                          : kernels::cuda::weight_format::expand;
    auto be = cuda_backend::create(std::move(weights), o);
    if (!be) return std::unexpected(be.error());
    return std::unique_ptr<backend>(std::move(*be));
#else
    return make_error(errc::unsupported, "engine.backend = \"cuda\": this build has no CUDA backend; "
                                         "use engine.backend = \"cpu\"");
#endif
  }
  if (s.backend != "cpu") return make_error(errc::invalid_argument, "unknown engine.backend '" + s.backend + "'");
  auto be = cpu_backend::create(std::move(weights), {s.block_size, s.kv_blocks, s.kv_memory_bytes}, cpu_options_of(s));
  if (!be) return std::unexpected(be.error());
  return std::unique_ptr<backend>(std::move(*be));
}

}  // namespace inflight

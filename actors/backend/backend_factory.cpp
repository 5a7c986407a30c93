#include "actors/backend/backend_factory.hpp"

#include <cblas.h>
#include <omp.h>

#include "actors/backend/cpu_backend.hpp"

namespace inflight {

bool has_cuda_backend() {
#ifdef INFLIGHT_HAS_CUDA
  return true;
#else
  return false;
#endif
}

result<std::unique_ptr<backend>> make_backend(const engine_settings& s, std::shared_ptr<const model_weights> weights) {
  if (s.backend == "cuda") {
    return make_error(errc::unsupported, "engine.backend = \"cuda\": this build has no CUDA backend; "
                                         "use engine.backend = \"cpu\"");
  }
  if (s.backend != "cpu") return make_error(errc::invalid_argument, "unknown engine.backend '" + s.backend + "'");
  if (s.threads > 0) {
    omp_set_num_threads(s.threads);
    openblas_set_num_threads(s.threads);
  }
  auto be = cpu_backend::create(std::move(weights), {s.block_size, s.kv_blocks, s.kv_memory_bytes});
  if (!be) return std::unexpected(be.error());
  return std::unique_ptr<backend>(std::move(*be));
}

}  // namespace inflight

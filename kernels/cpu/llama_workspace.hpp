#pragma once
// Sizing of the forward pass's workspace (llama_forward.cpp): internal to kernels/cpu.
#include "kernels/cpu/llama.hpp"

namespace inflight::kernels::cpu {

/// Sizes `ws` for this batch on `num_threads` threads and fills what the team reads but
/// never writes (RoPE frequencies, each token's sequence). Returns the scratch floats of
/// attention scores each query slot needs: the batch's largest position + 2.
int prepare_workspace(const llama_shape& s, const llama_weights_view& w, const ragged_batch_view& b,
                      llama_workspace& ws, int num_threads);

}  // namespace inflight::kernels::cpu

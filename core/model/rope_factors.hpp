#pragma once
/// Llama-3 RoPE scaling as per-pair frequency factors, the form GGUF files store it in
/// (llama.cpp's rope_freqs.weight: pair i's frequency is divided by factor i).
///
/// inflight keeps the scaling as its four parameters (model_config::scaling), which the
/// kernels turn into frequencies. A file's factors are mapped back onto them: the
/// factors only depend on the two wavelengths where the smoothing band starts and ends
/// (original_max_position / high_freq_factor and / low_freq_factor) and on `factor`,
/// so these are fitted from the factors (any band that gives the same factors at every
/// pair is equivalent), and the fit is accepted only when recomputing every factor from
/// it gives the file's values. Factors of any other shape are refused.

#include <span>
#include <vector>

#include "core/base/error.hpp"
#include "core/model/model_config.hpp"

namespace inflight {

/// The factor of each of head_dim / 2 pairs (all 1 when scaling is off), computed as
/// llama.cpp's converter does.
std::vector<float> llama3_rope_factors(const model_config& config);

/// The scaling whose factors are `factors` for `config`'s rope_theta and head_dim;
/// `original_max_position` is kept as given (it only scales the fitted band).
/// errc::unsupported when the factors are not Llama-3 scaling; scaling.type is none
/// when every factor is 1.
result<rope_scaling> try_fit_llama3_scaling(std::span<const float> factors, const model_config& config,
                                            int original_max_position);

}  // namespace inflight

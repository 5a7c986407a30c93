#include "core/engine/request/sampling_params.hpp"

#include <cmath>
#include <string>

namespace inflight {

result<void> try_validate(const sampling_params& params) {
  const auto bad = [](std::string what) { return make_error(errc::invalid_argument, std::move(what)); };
  if (!(params.temperature >= 0.0f) || !std::isfinite(params.temperature))
    return bad("temperature must be a finite number >= 0");
  if (!(params.top_p > 0.0f && params.top_p <= 1.0f)) return bad("top_p must be in (0, 1]");
  if (!(params.min_p >= 0.0f && params.min_p <= 1.0f)) return bad("min_p must be in [0, 1]");
  if (!(params.repetition_penalty > 0.0f) || !std::isfinite(params.repetition_penalty))
    return bad("repetition_penalty must be a finite number > 0");
  if (!(params.presence_penalty >= -2.0f && params.presence_penalty <= 2.0f))
    return bad("presence_penalty must be in [-2, 2]");
  if (!(params.frequency_penalty >= -2.0f && params.frequency_penalty <= 2.0f))
    return bad("frequency_penalty must be in [-2, 2]");
  if (params.max_tokens < min_max_tokens) return bad("max_tokens must be at least " + std::to_string(min_max_tokens));
  if (params.logprobs < 0 || params.logprobs > max_top_logprobs)
    return bad("logprobs must be in [0, " + std::to_string(max_top_logprobs) + "]");
  for (token_id id : params.stop_token_ids)
    if (id < 0) return bad("stop_token_ids must be non-negative");
  for (const auto& e : params.logit_bias) {
    if (e.token < 0) return bad("logit_bias: token ids must be non-negative, got " + std::to_string(e.token));
    if (!(e.bias >= -max_logit_bias && e.bias <= max_logit_bias))
      return bad("logit_bias: the bias of token " + std::to_string(e.token) + " must be in [-100, 100]");
  }
  return {};
}

}  // namespace inflight

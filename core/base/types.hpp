#pragma once
#include <cstdint>

namespace inflight {

using token_id = std::int32_t;
using seq_id = std::uint64_t;
using block_id = std::int32_t;

}  // namespace inflight

#pragma once
/// The storage types of weight matrices: the one table of their names and block layouts,
/// read by core, the loaders and both backends (dtypes/ depends on nothing of ours; the
/// CPU kernels call the type weight_type). Quantized types use the block layouts of GGUF
/// files (ggml's), so a mapped file is used as it is:
///
///   q8_0  32 values: fp16 d, int8 q[32]                       x = d * q
///   q4_0  32 values: fp16 d, 16 bytes of nibbles              x = d * (q - 8); value j in
///                    the low nibble of byte j, value j + 16 in its high nibble
///   q4_k  256 values: fp16 d, fp16 dmin, 12 bytes of 6-bit sub-block scales and mins,
///                    128 bytes of nibbles                     x = d * sc * q - dmin * m
///   q5_k  256 values: as q4_k plus 32 bytes of fifth bits
///   q5_0  32 values: fp16 d, 4 bytes of fifth bits (bit j: value j), 16 bytes of nibbles
///                    as q4_0                                  x = d * (q - 16)
///   q6_k  256 values: 128 bytes low nibbles, 64 bytes high 2 bits, int8 scales[16], fp16 d
///   q4_1  32 values: fp16 d, fp16 m, 16 bytes of nibbles as q4_0   x = d * q + m
///   q5_1  32 values: fp16 d, fp16 m, 4 bytes of fifth bits, 16 bytes of nibbles as q5_0
///                                                             x = d * q + m
///   iq4_nl 32 values: fp16 d, 16 bytes of nibbles as q4_0     x = d * iq4_values[q]
///   iq4_xs 256 values: fp16 d, 2 bytes of high scale bits, 4 bytes of low scale nibbles,
///                    128 bytes of nibbles; 8 sub-blocks of 32 (nibbles as iq4_nl's), each
///                    with a 6-bit scale ls                    x = d * (ls - 32) * iq4_values[q]
///   q2_k  256 values: 16 bytes of sub-block scale | min nibbles, 64 bytes of 2-bit levels,
///                    fp16 d, fp16 dmin; 16 sub-blocks of 16   x = d * sc * q - dmin * m
///   q3_k  256 values: 32 bytes of third bits, 64 bytes of 2-bit levels as q2_k's, 12 bytes
///                    of 6-bit sub-block scales, fp16 d; 16 sub-blocks of 16
///                                                             x = d * (sc - 32) * (q - 4)
///   mxfp4 32 values: an e8m0 exponent byte e, 16 bytes of nibbles as q4_0
///                                                             x = 2^(e - 128) * mxfp4_values[q]
///
/// A row of a matrix is a whole number of blocks.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace inflight {

enum class weight_dtype : std::uint8_t {
  f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k, q5_0, q4_1, q5_1, iq4_nl, iq4_xs, q2_k, q3_k, mxfp4
};
inline constexpr int num_weight_dtypes = 16;

/// The 16 levels of the iq4 types' nibbles (GGUF's non-linear codebook).
inline constexpr std::int8_t iq4_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                               1,    13,   25,  38,  53,  69,  89,  113};

/// The 16 levels of mxfp4's nibbles: the FP4 (E2M1) values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and
/// their negatives, doubled so they are integers (GGUF's kvalues_mxfp4); the block's
/// scale 2^(e - 127) is halved to match, hence 2^(e - 128).
inline constexpr std::int8_t mxfp4_values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/// Values and bytes of one block (1 value for the float types).
struct dtype_layout {
  int block_values = 1;
  int block_bytes = 4;
};

dtype_layout layout_of(weight_dtype dtype);
/// "f32" | "f16" | "bf16" | "q8_0" | "q4_0" | "q4_k" | "q5_k" | "q6_k" | "q5_0" | "q4_1" | "q5_1" |
/// "iq4_nl" | "iq4_xs" | "q2_k" | "q3_k" | "mxfp4".
const char* to_string(weight_dtype dtype);
/// The names to_string gives, as "f32 | f16 | ..." for error messages.
std::string weight_dtype_names();
/// Parses to_string's spelling (also "Q8_0", "Q4_K", ...: case does not matter).
std::optional<weight_dtype> try_parse_weight_dtype(std::string_view name);
bool is_quantized(weight_dtype dtype);
/// True when a row of `cols` values is a whole number of blocks.
bool fits_blocks(weight_dtype dtype, std::int64_t cols);
/// Bytes of a row of `cols` values (cols a whole number of blocks).
std::int64_t row_bytes(weight_dtype dtype, std::int64_t cols);

}  // namespace inflight

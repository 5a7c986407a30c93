#include <catch2/catch.hpp>

#include "dtypes/weight_dtype.hpp"

using namespace inflight;

TEST_CASE("weight dtypes: names round-trip and block layouts match GGUF's", "[dtypes]") {
  for (int i = 0; i < num_weight_dtypes; ++i) {
    const auto dtype = weight_dtype(i);
    REQUIRE(try_parse_weight_dtype(to_string(dtype)) == dtype);
  }
  CHECK(try_parse_weight_dtype("Q4_K") == weight_dtype::q4_k);
  CHECK(try_parse_weight_dtype("Q3_K") == weight_dtype::q3_k);
  CHECK_FALSE(try_parse_weight_dtype("q3_k_m").has_value());
  CHECK(try_parse_weight_dtype("MXFP4") == weight_dtype::mxfp4);
  CHECK_FALSE(try_parse_weight_dtype("mxfp4_moe").has_value());
  CHECK(weight_dtype_names() ==
        "f32 | f16 | bf16 | q8_0 | q4_0 | q4_k | q5_k | q6_k | q5_0 | q4_1 | q5_1 | iq4_nl | iq4_xs | q2_k | q3_k | mxfp4");
  CHECK(row_bytes(weight_dtype::mxfp4, 64) == 2 * 17);  // block_mxfp4: e, qs[16]
  CHECK(fits_blocks(weight_dtype::mxfp4, 2880));       // gpt-oss's hidden size
  CHECK_FALSE(fits_blocks(weight_dtype::mxfp4, 172));
  CHECK(is_quantized(weight_dtype::mxfp4));
  CHECK(row_bytes(weight_dtype::q2_k, 512) == 2 * 84);
  CHECK(row_bytes(weight_dtype::q3_k, 256) == 110);
  CHECK_FALSE(fits_blocks(weight_dtype::q2_k, 128));
  CHECK(row_bytes(weight_dtype::iq4_nl, 64) == 2 * 18);
  CHECK(row_bytes(weight_dtype::iq4_xs, 512) == 2 * 136);
  CHECK(row_bytes(weight_dtype::q4_1, 64) == 2 * 20);
  CHECK(row_bytes(weight_dtype::q5_1, 32) == 24);
  CHECK(row_bytes(weight_dtype::q5_0, 64) == 44);
  // Bytes per block from ggml-common.h's structs.
  CHECK(row_bytes(weight_dtype::q8_0, 64) == 2 * 34);
  CHECK(row_bytes(weight_dtype::q4_0, 32) == 18);
  CHECK(row_bytes(weight_dtype::q4_k, 512) == 2 * 144);
  CHECK(row_bytes(weight_dtype::q5_k, 256) == 176);
  CHECK(row_bytes(weight_dtype::q6_k, 256) == 210);
  CHECK(row_bytes(weight_dtype::bf16, 7) == 14);
  CHECK(fits_blocks(weight_dtype::f32, 172));
  CHECK_FALSE(fits_blocks(weight_dtype::q8_0, 172));
  CHECK_FALSE(fits_blocks(weight_dtype::q4_k, 128));
  CHECK(is_quantized(weight_dtype::q6_k));
  CHECK_FALSE(is_quantized(weight_dtype::bf16));
}

// The reference (de)quantization: hand-built blocks laid out as ggml-common.h says, whose
// values are computed by hand from the format's definition, and round trips of random rows.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/model/quant/quantize.hpp"
#include "dtypes/half.hpp"

using namespace inflight;

namespace {

std::vector<std::byte> bytes(std::initializer_list<int> values, std::size_t size) {
  std::vector<std::byte> out(size);
  std::size_t i = 0;
  for (int v : values) out[i++] = std::byte(v);
  return out;
}

std::vector<float> dequantized(weight_dtype dtype, const std::vector<std::byte>& block, int n) {
  std::vector<float> out(std::size_t(n), NAN);
  REQUIRE(dequantize_row(dtype, block.data(), n, out.data()).has_value());
  return out;
}

/// Relative RMS error of a round trip through dtype.
double round_trip_error(weight_dtype dtype, const std::vector<float>& x) {
  std::vector<std::byte> q(std::size_t(row_bytes(dtype, std::int64_t(x.size()))));
  std::vector<float> y(x.size());
  REQUIRE(quantize_row(dtype, x.data(), std::int64_t(x.size()), q.data()).has_value());
  REQUIRE(dequantize_row(dtype, q.data(), std::int64_t(x.size()), y.data()).has_value());
  double e = 0.0, s = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) e += (x[i] - y[i]) * double(x[i] - y[i]), s += double(x[i]) * x[i];
  return std::sqrt(e / s);
}

}  // namespace

TEST_CASE("half and bfloat16 conversions round to nearest even", "[core][quant]") {
  CHECK(float_to_fp16(1.0f) == 0x3c00);
  CHECK(float_to_fp16(-2.0f) == 0xc000);
  CHECK(float_to_fp16(65504.0f) == 0x7bff);
  CHECK(float_to_fp16(65520.0f) == 0x7c00);                 // halfway to the next power: inf
  CHECK(float_to_fp16(1.0f + 0x1p-11f) == 0x3c00);          // a tie goes to the even mantissa
  CHECK(float_to_fp16(1.0f + 3 * 0x1p-11f) == 0x3c02);
  CHECK(float_to_fp16(0x1p-24f) == 0x0001);                 // smallest subnormal
  CHECK(float_to_fp16(0x1p-25f) == 0x0000);                 // a tie with zero goes to zero
  CHECK(fp16_to_float(0x0001) == 0x1p-24f);
  CHECK(fp16_to_float(0x7bff) == 65504.0f);
  CHECK(std::isnan(fp16_to_float(float_to_fp16(NAN))));
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(float_to_bf16(1.0f + 0x1p-8f) == 0x3f80);           // tie: even
  CHECK(float_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);
  CHECK(bf16_to_float(0xbfc0) == -1.5f);
  CHECK(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

TEST_CASE("dequantization of hand-built q8_0, q4_0, f16 and bf16 blocks", "[core][quant]") {
  // q8_0: half d = 2.0 (0x4000), then 32 int8.
  const auto q8 = dequantized(weight_dtype::q8_0, bytes({0x00, 0x40, 0x80, 0, 0, 0, 0, 0xff}, 34), 32);
  CHECK(q8[0] == -256.0f);  // -128 * 2
  CHECK(q8[5] == -2.0f);    // -1 * 2
  CHECK(q8[6] == 0.0f);
  // q4_0: half d = 0.5 (0x3800); value j in the low nibble of byte j, j + 16 in its high nibble.
  const auto q4 = dequantized(weight_dtype::q4_0, bytes({0x00, 0x38, 0xf0, 0x98}, 18), 32);
  CHECK(q4[0] == -4.0f);   // (0 - 8) * 0.5
  CHECK(q4[16] == 3.5f);   // (15 - 8) * 0.5
  CHECK(q4[1] == 0.0f);    // (8 - 8) * 0.5
  CHECK(q4[17] == 0.5f);   // (9 - 8) * 0.5
  CHECK(q4[2] == -4.0f);   // a zero byte is -8 * d
  const auto f16 = dequantized(weight_dtype::f16, bytes({0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0xff, 0x7b}, 8), 4);
  CHECK(f16 == std::vector<float>{1.0f, -2.0f, 0x1p-24f, 65504.0f});
  const auto bf16 = dequantized(weight_dtype::bf16, bytes({0x80, 0x3f, 0xc0, 0xbf}, 4), 2);
  CHECK(bf16 == std::vector<float>{1.0f, -1.5f});
}

TEST_CASE("dequantization of hand-built q4_k and q5_k super-blocks", "[core][quant]") {
  // d = 1.0, dmin = 0.5; sub-block scales {1,2,3,4,33,34,35,63} and mins {0,1,2,3,17,18,19,20}
  // packed in 12 bytes: sc[j] | (sc[j+4] >> 4) << 6, m[j] | (m[j+4] >> 4) << 6, and the
  // low nibbles of sc[j+4] and m[j+4].
  const std::initializer_list<int> head = {0x00, 0x3c, 0x00, 0x38, 0x81, 0x82, 0x83, 0xc4,
                                           0x40, 0x41, 0x42, 0x43, 0x11, 0x22, 0x33, 0x4f};
  auto q4k = bytes(head, 144);
  q4k[16 + 0] = std::byte(0x5a);    // value 0 (low nibble 10), value 32 (high nibble 5)
  q4k[16 + 64] = std::byte(0x07);   // value 128: sub-block 4, low nibble 7
  q4k[16 + 127] = std::byte(0xf0);  // value 255: sub-block 7, high nibble 15; value 223: low nibble 0
  const auto v4 = dequantized(weight_dtype::q4_k, q4k, 256);
  CHECK(v4[0] == 10.0f);     // 1 * 1 * 10 - 0.5 * 0
  CHECK(v4[32] == 9.5f);     // 1 * 2 * 5 - 0.5 * 1
  CHECK(v4[33] == -0.5f);    // 2 * 0 - 0.5 * 1
  CHECK(v4[128] == 222.5f);  // 33 * 7 - 0.5 * 17
  CHECK(v4[223] == -9.5f);   // 35 * 0 - 0.5 * 19
  CHECK(v4[255] == 935.0f);  // 63 * 15 - 0.5 * 20
  // q5_k: the same head, then qh[32] (fifth bits), then qs[128].
  auto q5k = bytes(head, 176);
  q5k[16 + 0] = std::byte(0x01);   // bit 0 of qh[0]: value 0 gets +16
  q5k[16 + 31] = std::byte(0x80);  // bit 7 of qh[31]: value 255 gets +16
  q5k[48 + 0] = std::byte(0x5a);
  q5k[48 + 127] = std::byte(0xf0);
  const auto v5 = dequantized(weight_dtype::q5_k, q5k, 256);
  CHECK(v5[0] == 26.0f);      // 1 * (10 + 16) - 0
  CHECK(v5[32] == 9.5f);      // bit 1 of qh[0] is clear
  CHECK(v5[255] == 1943.0f);  // 63 * (15 + 16) - 10
  CHECK(v5[31] == 0.0f);      // value 31: nibble 0, no fifth bit, sub-block 0's min is 0
}

TEST_CASE("dequantization of a hand-built q5_0 block, and its fifth bits written where GGUF has them", "[core][quant]") {
  // half d = 0.5 (0x3800) | qh: 4 bytes little-endian, bit j = fifth bit of value j | 16 nibble bytes.
  auto b = bytes({0x00, 0x38, 0x01, 0x00, 0x00, 0x80}, 22);
  b[6 + 0] = std::byte(0x3a);   // value 0: nibble 10 (+16 from bit 0), value 16: nibble 3
  b[6 + 15] = std::byte(0xf0);  // value 15: nibble 0, value 31: nibble 15 (+16 from bit 31)
  const auto v = dequantized(weight_dtype::q5_0, b, 32);
  CHECK(v[0] == 5.0f);     // 0.5 * ((10 | 16) - 16)
  CHECK(v[16] == -6.5f);   // 0.5 * (3 - 16)
  CHECK(v[15] == -8.0f);   // 0.5 * (0 - 16)
  CHECK(v[31] == 7.5f);    // 0.5 * ((15 | 16) - 16)
  CHECK(v[1] == -8.0f);
  // Quantizing values that need the fifth bit sets it in the right byte of qh.
  std::vector<float> x(32, 0.0f);
  x[0] = -16.0f, x[9] = 15.0f, x[25] = 8.0f;
  std::vector<std::byte> q(22);
  REQUIRE(quantize_row(weight_dtype::q5_0, x.data(), 32, q.data()));
  const auto back = dequantized(weight_dtype::q5_0, q, 32);
  CHECK(back[0] == -16.0f);
  CHECK(back[9] == 15.0f);
  CHECK(back[25] == 8.0f);
  CHECK(std::to_integer<int>(q[2 + 9 / 8]) & (1 << (9 % 8)));     // value 9: 15 + 16 = 31, fifth bit set
  CHECK(std::to_integer<int>(q[2 + 25 / 8]) & (1 << (25 % 8)));   // value 25: 8 + 16 = 24
  CHECK_FALSE(std::to_integer<int>(q[2]) & 1);                    // value 0: -16 + 16 = 0
}

TEST_CASE("dequantization of hand-built q4_1 and q5_1 blocks: an offset, unsigned levels, fifth bits", "[core][quant]") {
  // q4_1: half d = 0.5 (0x3800) | half m = -2.0 (0xc000) | 16 nibble bytes as q4_0's.
  auto b4 = bytes({0x00, 0x38, 0x00, 0xc0}, 20);
  b4[4 + 0] = std::byte(0xf3);  // value 0: nibble 3, value 16: nibble 15
  b4[4 + 9] = std::byte(0x08);  // value 9: nibble 8, value 25: nibble 0
  const auto v4 = dequantized(weight_dtype::q4_1, b4, 32);
  CHECK(v4[0] == -0.5f);   // 0.5 * 3 - 2
  CHECK(v4[16] == 5.5f);   // 0.5 * 15 - 2
  CHECK(v4[9] == 2.0f);    // 0.5 * 8 - 2
  CHECK(v4[25] == -2.0f);  // a zero nibble is m
  // q5_1: half d = 0.25 (0x3400) | half m = 1.0 (0x3c00) | qh (bit j: value j) | nibbles.
  auto b5 = bytes({0x00, 0x34, 0x00, 0x3c, 0x01, 0x00, 0x00, 0x80}, 24);
  b5[8 + 0] = std::byte(0x2f);   // value 0: nibble 15 (+16 from bit 0), value 16: nibble 2
  b5[8 + 15] = std::byte(0x10);  // value 15: nibble 0, value 31: nibble 1 (+16 from bit 31)
  const auto v5 = dequantized(weight_dtype::q5_1, b5, 32);
  CHECK(v5[0] == 8.75f);   // 0.25 * 31 + 1
  CHECK(v5[16] == 1.5f);   // 0.25 * 2 + 1
  CHECK(v5[15] == 1.0f);   // 0.25 * 0 + 1
  CHECK(v5[31] == 5.25f);  // 0.25 * 17 + 1
  // Quantized: the block's minimum is m, its maximum the top level; both come back exactly
  // when they are halves; the fifth bits land where GGUF has them.
  std::vector<float> x(32, 0.5f);
  x[3] = -3.0f, x[20] = 4.75f;  // range 7.75: d = 0.25 (5 bits), 7.75 / 15 (4 bits)
  for (const auto dtype : {weight_dtype::q4_1, weight_dtype::q5_1}) {
    INFO(to_string(dtype));
    std::vector<std::byte> q(std::size_t(row_bytes(dtype, 32)));
    REQUIRE(quantize_row(dtype, x.data(), 32, q.data()));
    const auto back = dequantized(dtype, q, 32);
    CHECK(back[3] == -3.0f);
    CHECK(back[20] == Approx(4.75f).margin(4e-3));  // the top level, through a rounded d
    CHECK(back[0] == Approx(0.5f).margin(dtype == weight_dtype::q5_1 ? 0.13 : 0.26));
  }
  std::vector<std::byte> q5(24);
  REQUIRE(quantize_row(weight_dtype::q5_1, x.data(), 32, q5.data()));
  CHECK(std::to_integer<int>(q5[4 + 20 / 8]) & (1 << (20 % 8)));  // value 20: level 31, fifth bit set
  CHECK_FALSE(std::to_integer<int>(q5[4 + 3 / 8]) & (1 << (3 % 8)));  // value 3: level 0
}

TEST_CASE("dequantization of hand-built iq4_nl and iq4_xs blocks: codebook levels and 6-bit scales", "[core][quant]") {
  // iq4_nl: half d = 0.5 (0x3800) | 16 nibble bytes as q4_0's, each naming a codebook level.
  auto nl = bytes({0x00, 0x38}, 18);
  nl[2 + 0] = std::byte(0xf0);  // value 0: level 0 (-127), value 16: level 15 (113)
  nl[2 + 5] = std::byte(0x78);  // value 5: level 8 (1), value 21: level 7 (-10)
  const auto v = dequantized(weight_dtype::iq4_nl, nl, 32);
  CHECK(v[0] == -63.5f);
  CHECK(v[16] == 56.5f);
  CHECK(v[5] == 0.5f);
  CHECK(v[21] == -5.0f);
  // iq4_xs: half d = 0.25 (0x3400) | scales_h (2 bits per sub-block) | scales_l (a nibble
  // per sub-block) | 8 x 16 nibble bytes. Sub-block 0: ls = 0x21 = 33 -> 0.25 * 1;
  // sub-block 3: ls = 0x0f | (1 << 4) = 31 -> 0.25 * -1; sub-block 7: ls = 0x3f = 63 -> 0.25 * 31.
  auto xs = bytes({0x00, 0x34, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00}, 136);
  std::uint16_t high = 2 << 0 | 1 << 6 | 3 << 14;
  std::memcpy(xs.data() + 2, &high, 2);
  xs[4 + 0] = std::byte(0x01);           // sub-block 0 low nibble 1, sub-block 1: 0
  xs[4 + 1] = std::byte(0xf0);           // sub-block 3's low nibble (high half of byte 1)
  xs[4 + 3] = std::byte(0xf0);           // sub-block 7's low nibble
  xs[8 + 16 * 0 + 0] = std::byte(0x0f);  // sub-block 0, value 0: level 15 (113)
  xs[8 + 16 * 3 + 1] = std::byte(0x80);  // sub-block 3, value 17: level 8 (1)
  xs[8 + 16 * 7 + 15] = std::byte(0x00); // sub-block 7, value 15: level 0 (-127)
  const auto w = dequantized(weight_dtype::iq4_xs, xs, 256);
  CHECK(w[0] == 28.25f);             // 0.25 * 1 * 113
  CHECK(w[96 + 17] == -0.25f);       // 0.25 * -1 * 1
  CHECK(w[224 + 15] == -984.25f);    // 0.25 * 31 * -127
  CHECK(w[32] == Approx(0.25f * -32 * -127));  // sub-block 1: ls 0 -> -32, nibble 0
}

TEST_CASE("dequantization of a hand-built q2_k super-block: 4-bit scales and mins, 2-bit levels", "[core][quant]") {
  // scales[16] (sc | m << 4) | qs[64] | half d = 0.5 (0x3800) | half dmin = 0.25 (0x3400).
  // In each half of 128 values, value 32g + l takes bits 2g, 2g+1 of qs[32 half + l].
  std::vector<std::byte> b(84);
  b[0] = std::byte(0x23);   // sub-block 0: sc 3, m 2 -> step 1.5, offset 0.5
  b[2] = std::byte(0x0f);   // sub-block 2: sc 15, m 0 -> step 7.5
  b[4] = std::byte(0x12);   // sub-block 4: sc 2, m 1 -> step 1, offset 0.25
  b[9] = std::byte(0x51);   // sub-block 9: sc 1, m 5 -> step 0.5, offset 1.25
  b[15] = std::byte(0xf0);  // sub-block 15: sc 0, m 15 -> offset 3.75
  b[16 + 0] = std::byte(0x1b);   // qs[0]: value 0 level 3, value 32 level 2, value 64 level 1
  b[16 + 48] = std::byte(0x01);  // qs[48]: value 128 + 16 = 144, level 1
  b[16 + 63] = std::byte(0xc0);  // qs[63]: value 128 + 96 + 31 = 255, level 3
  b[80] = std::byte(0x00), b[81] = std::byte(0x38), b[82] = std::byte(0x00), b[83] = std::byte(0x34);
  const auto v = dequantized(weight_dtype::q2_k, b, 256);
  CHECK(v[0] == 4.0f);      // 1.5 * 3 - 0.5
  CHECK(v[1] == -0.5f);     // level 0: the min alone
  CHECK(v[32] == 15.0f);    // 7.5 * 2
  CHECK(v[64] == 0.75f);    // 1 * 1 - 0.25
  CHECK(v[144] == -0.75f);  // 0.5 * 1 - 1.25
  CHECK(v[255] == -3.75f);  // 0 * 3 - 3.75
  CHECK(v[240] == -3.75f);
  CHECK(v[100] == 0.0f);    // sub-block 6: sc 0, m 0
}

TEST_CASE("dequantization of a hand-built q3_k super-block: 6-bit packed scales, third bits", "[core][quant]") {
  // hmask[32] | qs[64] as q2_k's | scales[12] | half d = 0.25 (0x3400). Value i's third bit
  // is bit i / 32 of hmask[i % 32]; without it the level is q - 4. Scale j: the low nibble
  // in scales[j % 8] (high half when j >= 8), the top 2 bits at bit 2 (j / 4) of scales[8 + j % 4].
  std::vector<std::byte> b(110);
  b[0] = std::byte(0x01);    // hmask[0]: value 0's third bit
  b[1] = std::byte(0x08);    // hmask[1]: value 97's (bit 3)
  b[31] = std::byte(0x40);   // hmask[31]: value 223's (bit 6)
  b[32 + 0] = std::byte(0x03);   // qs[0]: value 0 low bits 3, value 32 low bits 0
  b[32 + 1] = std::byte(0x80);   // qs[1]: value 1 low bits 0, value 97 low bits 2
  b[32 + 2] = std::byte(0x02);   // qs[2]: value 2 low bits 2
  b[32 + 63] = std::byte(0x10);  // qs[63]: value 128 + 64 + 31 = 223 low bits 1
  b[96 + 0] = std::byte(0x01), b[96 + 8] = std::byte(0x02);   // scale 0: 1 | 2 << 4 = 33 -> 1
  b[96 + 6] = std::byte(0x0e), b[96 + 10] = std::byte(0x04);  // scale 6: 14 | 1 << 4 = 30 -> -2
  b[96 + 5] = std::byte(0xf0), b[96 + 9] = std::byte(0xc0);   // scale 13: 15 | 3 << 4 = 63 -> 31
  b[108] = std::byte(0x00), b[109] = std::byte(0x34);
  const auto v = dequantized(weight_dtype::q3_k, b, 256);
  CHECK(v[0] == 0.75f);     // 0.25 * 1 * (3 + 4 - 4)
  CHECK(v[1] == -1.0f);     // 0.25 * 1 * (0 - 4)
  CHECK(v[2] == -0.5f);     // 0.25 * 1 * (2 - 4)
  CHECK(v[97] == -1.0f);    // 0.25 * -2 * (2 + 4 - 4)
  CHECK(v[223] == 7.75f);   // 0.25 * 31 * (1 + 4 - 4)
  CHECK(v[208] == -31.0f);  // 0.25 * 31 * (0 - 4)
  CHECK(v[32] == 32.0f);    // scale 2 left 0: 0.25 * -32 * (0 - 4)
}

TEST_CASE("q2_k and q3_k keep values that lie on their grids exactly", "[core][quant]") {
  // q2_k: sub-block j at step d * sc and min dmin * m, d = 1/16, dmin = 1/32 and sc = m =
  // 15 >> (j % 4) (15, 7, 3, 1): levels 0..3 each four times.
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) {
    const int sc = 15 >> (i / 16 % 4);
    x[std::size_t(i)] = float(sc) / 16.0f * float(i % 4) - float(sc) / 32.0f;
  }
  std::vector<std::byte> q2(std::size_t(row_bytes(weight_dtype::q2_k, 256)));
  REQUIRE(quantize_row(weight_dtype::q2_k, x.data(), 256, q2.data()).has_value());
  CHECK(dequantized(weight_dtype::q2_k, q2, 256) == x);
  // q3_k: sub-block j at step -(1 >> (j % 4)) = d * (sc - 32), d = 1/32; levels -4..3 twice.
  for (float sign : {1.0f, -1.0f}) {
    for (int i = 0; i < 256; ++i) x[std::size_t(i)] = sign * -std::ldexp(1.0f, -(i / 16 % 4)) * float(i % 8 - 4);
    std::vector<std::byte> q3(std::size_t(row_bytes(weight_dtype::q3_k, 256)));
    REQUIRE(quantize_row(weight_dtype::q3_k, x.data(), 256, q3.data()).has_value());
    INFO("sign " << sign);
    CHECK(dequantized(weight_dtype::q3_k, q3, 256) == x);
  }
}

TEST_CASE("e8m0 scales: 2^(e - 128) for every exponent byte, subnormals and the largest included", "[core][quant]") {
  for (int e = 0; e < 256; ++e) {
    INFO("e = " << e);
    CHECK(e8m0_half(std::byte(e)) == std::ldexp(1.0f, e - 128));
  }
  CHECK(e8m0_half(std::byte(0)) == 0x1p-128f);  // an fp32 subnormal, not 0
  CHECK(e8m0_half(std::byte(127)) == 0.5f);
  CHECK(e8m0_half(std::byte(255)) == 0x1p127f);
}

TEST_CASE("dequantization of hand-built mxfp4 blocks: exponent byte, both nibbles, signs, extreme exponents",
          "[core][quant]") {
  // e = 127: 2^(127 - 128) = 0.5, so a level is FP4's own value (levels are doubled) | 16
  // nibble bytes as q4_0's: value i in the low nibble of byte 1 + i, value i + 16 in its high one.
  auto b = bytes({127}, 17);
  b[1 + 0] = std::byte(0xf7);   // value 0: nibble 7 (12 -> 6.0), value 16: nibble 15 (-12 -> -6.0)
  b[1 + 3] = std::byte(0x91);   // value 3: nibble 1 (1 -> 0.5), value 19: nibble 9 (-1 -> -0.5)
  b[1 + 15] = std::byte(0x5c);  // value 15: nibble 12 (-4 -> -2.0), value 31: nibble 5 (6 -> 3.0)
  b[1 + 7] = std::byte(0x08);   // value 7: nibble 8 (-0: 0), value 23: nibble 0 (0)
  const auto v = dequantized(weight_dtype::mxfp4, b, 32);
  CHECK(v[0] == 6.0f);
  CHECK(v[16] == -6.0f);
  CHECK(v[3] == 0.5f);
  CHECK(v[19] == -0.5f);
  CHECK(v[15] == -2.0f);
  CHECK(v[31] == 3.0f);
  CHECK(v[7] == 0.0f);
  CHECK(v[23] == 0.0f);
  CHECK(v[1] == 0.0f);  // nibble 0
  // Every level, through each half of the byte.
  for (int q = 0; q < 16; ++q) {
    b[1 + 10] = std::byte(q | (15 - q) << 4);
    const auto w = dequantized(weight_dtype::mxfp4, b, 32);
    CHECK(w[10] == 0.5f * float(mxfp4_values[q]));
    CHECK(w[26] == 0.5f * float(mxfp4_values[15 - q]));
  }
  // A second block's own exponent: e = 0 (2^-128, subnormal) and e = 200 (2^72).
  auto two = bytes({0, 0x27}, 34);  // block 0: value 0 nibble 7 (12), value 16 nibble 2 (2)
  two[17] = std::byte(200);
  two[18 + 0] = std::byte(0xe6);  // block 1: value 0 nibble 6 (8), value 16 nibble 14 (-8)
  const auto t = dequantized(weight_dtype::mxfp4, two, 64);
  CHECK(t[0] == 12.0f * 0x1p-128f);
  CHECK(t[16] == 0x1p-127f);
  CHECK(t[32] == 0x1p75f);   // 8 * 2^72
  CHECK(t[48] == -0x1p75f);
  CHECK(t[33] == 0.0f);
}

TEST_CASE("mxfp4 quantization is ggml's rule: the exponent from the largest |x|, the nearest level, ties low",
          "[core][quant]") {
  const auto quantized = [](const std::vector<float>& x) {
    std::vector<std::byte> q(std::size_t(row_bytes(weight_dtype::mxfp4, std::int64_t(x.size()))));
    REQUIRE(quantize_row(weight_dtype::mxfp4, x.data(), std::int64_t(x.size()), q.data()).has_value());
    return q;
  };
  const auto nibble = [](const std::vector<std::byte>& q, int i) {
    const int byte = std::to_integer<int>(q[1 + i % 16]);
    return i < 16 ? byte & 0xf : byte >> 4;
  };
  // largest |x| 3.0: floor(log2 3) = 1, e = 1 - 2 + 127 = 126, d = 2^-2; every value on
  // the grid of 0.25 * levels comes back exactly.
  std::vector<float> x(32, 0.0f);
  for (int q = 0; q < 16; ++q) x[std::size_t(2 * q)] = 0.25f * float(mxfp4_values[q]);
  auto q = quantized(x);
  CHECK(std::to_integer<int>(q[0]) == 126);
  CHECK(dequantized(weight_dtype::mxfp4, q, 32) == x);
  for (int k = 0; k < 16; ++k) CHECK(nibble(q, 2 * k) == (k == 8 ? 0 : k));  // level 0 is nibble 0
  // Ties go to the first nibble of equal error: 0 over -0 (8), 4 over 6 at 5, -4 over -6 at -5.
  x.assign(32, 0.0f);
  x[0] = 3.0f, x[1] = 1.25f, x[2] = -1.25f, x[3] = 0.125f, x[4] = -0.0f, x[20] = -3.5f;
  q = quantized(x);
  CHECK(std::to_integer<int>(q[0]) == 126);
  CHECK(nibble(q, 1) == 4);    // 5 units: levels 4 and 6 tie
  CHECK(nibble(q, 2) == 12);   // -5 units: -4 (nibble 12) before -6 (13)
  CHECK(nibble(q, 3) == 0);    // half a unit: 0 and 1 tie
  CHECK(nibble(q, 4) == 0);    // -0 is level 0, not nibble 8
  CHECK(nibble(q, 20) == 15);  // -14 units: the far end, -12
  CHECK(nibble(q, 5) == 0);
  // Values past 12 units clip: largest |x| 3.75 keeps e = 126 and comes back as 3.0.
  x.assign(32, 0.0f);
  x[31] = -3.75f;
  q = quantized(x);
  CHECK(std::to_integer<int>(q[0]) == 126);
  CHECK(dequantized(weight_dtype::mxfp4, q, 32)[31] == -3.0f);
  // Exponents at the ends: 1.0 -> 125; 1e30 -> floor(log2) 99 -> 224; 2^-125 -> 0, and
  // smaller blocks (whose exponent would be below 0) take 0 too; zeros take 0.
  const std::pair<float, int> exponents[] = {{1.0f, 125}, {0.99f, 124}, {1e30f, 224}, {0x1p-125f, 0},
                                            {0x1p-130f, 0}, {0.0f, 0}, {0x1p127f, 252}};
  for (const auto& [amax, e] : exponents) {
    INFO("largest |x| " << amax);
    x.assign(32, 0.0f);
    x[9] = amax;
    CHECK(std::to_integer<int>(quantized(x)[0]) == e);
  }
  // Two blocks, each its own exponent.
  x.assign(64, 0.0f);
  x[0] = 6.0f, x[32] = -0.75f;
  q = quantized(x);
  CHECK(std::to_integer<int>(q[0]) == 127);     // floor(log2 6) = 2
  CHECK(std::to_integer<int>(q[17]) == 124);    // floor(log2 0.75) = -1
  CHECK(dequantized(weight_dtype::mxfp4, q, 64)[32] == -0.75f);
}

TEST_CASE("dequantization of a hand-built q6_k super-block", "[core][quant]") {
  // ql[128] | qh[64] | int8 scales[16] | half d = 0.25 (0x3400).
  std::vector<std::byte> b(210);
  b[0] = std::byte(0x3b);    // ql[0]: low 11 (value 0), high 3 (value 64)
  b[32] = std::byte(0x52);   // ql[32]: low 2 (value 32), high 5 (value 96)
  b[128] = std::byte(0xe4);  // qh[0]: high bits 0, 1, 2, 3 for values 0, 32, 64, 96
  b[64] = std::byte(0x0f);   // second half: ql[64] low 15 (value 128)
  b[128 + 32] = std::byte(0x03);  // qh[32]: high bits 3 for value 128
  for (int j = 0; j < 16; ++j) b[192 + j] = std::byte(1);
  b[192 + 0] = std::byte(2), b[192 + 2] = std::byte(-3), b[192 + 4] = std::byte(4), b[192 + 6] = std::byte(5);
  b[192 + 8] = std::byte(-1);
  b[208] = std::byte(0x00), b[209] = std::byte(0x34);
  const auto v = dequantized(weight_dtype::q6_k, b, 256);
  CHECK(v[0] == -10.5f);    // 0.25 * 2 * (11 - 32)
  CHECK(v[32] == 10.5f);    // 0.25 * -3 * ((2 | 16) - 32)
  CHECK(v[64] == 3.0f);     // 0.25 * 4 * ((3 | 32) - 32)
  CHECK(v[96] == 26.25f);   // 0.25 * 5 * ((5 | 48) - 32)
  CHECK(v[1] == -16.0f);    // 0.25 * 2 * (0 - 32)
  CHECK(v[128] == -7.75f);  // 0.25 * -1 * ((15 | 48) - 32)
}

TEST_CASE("q6_k keeps a block's largest value exactly, whether it is positive or negative", "[core][quant]") {
  // Every value on its sub-block's grid: sub-block j holds levels -32, -28, .., 28 of a
  // step -2^-(5 + j % 4), so its largest magnitude, 2^-(j % 4), is level -32 and the
  // block's largest is 1. Its scale must then reach the int8 scales' full range (-128):
  // with the opposite sign it could only reach 127, and the largest values would come
  // back 1/128 short.
  for (float sign : {1.0f, -1.0f}) {
    INFO("largest value " << sign);
    std::vector<float> x(256);
    for (int i = 0; i < 256; ++i) {
      const int j = i / 16, level = -32 + 4 * (i % 16);
      x[std::size_t(i)] = sign * float(level) * -std::ldexp(1.0f, -5 - j % 4);
    }
    std::vector<std::byte> q(std::size_t(row_bytes(weight_dtype::q6_k, 256)));
    REQUIRE(quantize_row(weight_dtype::q6_k, x.data(), 256, q.data()).has_value());
    const auto back = dequantized(weight_dtype::q6_k, q, 256);
    CHECK(back[0] == sign * 1.0f);
    CHECK(back[64] == sign * 1.0f);
    CHECK(back == x);
  }
}

TEST_CASE("round trips of random rows stay within each format's error", "[core][quant]") {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> x(4096);
  for (auto& v : x) v = normal(rng);
  // Relative RMS error of Gaussian weights (llama.cpp's own quantizers land near these).
  CHECK(round_trip_error(weight_dtype::f32, x) == 0.0);
  CHECK(round_trip_error(weight_dtype::f16, x) < 3e-4);
  CHECK(round_trip_error(weight_dtype::bf16, x) < 3e-3);
  CHECK(round_trip_error(weight_dtype::q8_0, x) < 0.007);
  CHECK(round_trip_error(weight_dtype::q6_k, x) < 0.02);
  CHECK(round_trip_error(weight_dtype::q5_k, x) < 0.04);
  CHECK(round_trip_error(weight_dtype::q4_k, x) < 0.08);
  CHECK(round_trip_error(weight_dtype::q4_0, x) < 0.09);
  CHECK(round_trip_error(weight_dtype::q5_0, x) < 0.045);
  CHECK(round_trip_error(weight_dtype::q4_1, x) < 0.11);
  CHECK(round_trip_error(weight_dtype::q5_1, x) < 0.055);
  CHECK(round_trip_error(weight_dtype::iq4_nl, x) < 0.09);
  CHECK(round_trip_error(weight_dtype::iq4_xs, x) < 0.09);
  CHECK(round_trip_error(weight_dtype::q3_k, x) < 0.16);
  CHECK(round_trip_error(weight_dtype::q2_k, x) < 0.29);
  CHECK(round_trip_error(weight_dtype::mxfp4, x) < 0.125);  // 0.115; an exponent one off: 0.32 / 0.135
  // The scale search beats q4_0's plain rule (largest |x| -> -8, d = max / -8).
  double plain = 0.0, s = 0.0;
  for (std::size_t b = 0; b < x.size(); b += 32) {
    float extreme = 0.0f;
    for (int i = 0; i < 32; ++i) extreme = std::fabs(x[b + i]) > std::fabs(extreme) ? x[b + i] : extreme;
    const float d = fp16_to_float(float_to_fp16(extreme / -8.0f));
    for (int i = 0; i < 32; ++i) {
      const float q = std::clamp(std::round(x[b + i] / d), -8.0f, 7.0f);
      plain += (x[b + i] - d * q) * double(x[b + i] - d * q), s += double(x[b + i]) * x[b + i];
    }
  }
  CHECK(round_trip_error(weight_dtype::q4_0, x) < 0.97 * std::sqrt(plain / s));
}

TEST_CASE("quantized rows of zeros, constants and tiny values", "[core][quant]") {
  for (int t = 0; t < num_weight_dtypes; ++t) {
    const auto dtype = weight_dtype(t);
    INFO(to_string(dtype));
    std::vector<float> zeros(256, 0.0f), back(256, NAN);
    std::vector<std::byte> q(std::size_t(row_bytes(dtype, 256)));
    REQUIRE(quantize_row(dtype, zeros.data(), 256, q.data()).has_value());
    REQUIRE(dequantize_row(dtype, q.data(), 256, back.data()).has_value());
    CHECK(back == zeros);
    // A row of tiny values keeps its sign and rough size (no scale underflows to 0 in f32).
    std::vector<float> tiny(256);
    for (int i = 0; i < 256; ++i) tiny[i] = (i % 2 ? 1e-3f : -1e-3f) * float(1 + i % 7);
    REQUIRE(quantize_row(dtype, tiny.data(), 256, q.data()).has_value());
    REQUIRE(dequantize_row(dtype, q.data(), 256, back.data()).has_value());
    // q4_1's 16 levels span min..max (ggml's rule): half a step of 0.014 / 15 here; the
    // iq4 codebook's levels near zero are 11-12 units of d = 0.007 / 127 apart; q3_k's
    // levels (-4..3) and q2_k's (0..3) are steps of up to 0.007 / 3 and 0.014 / 3.
    const bool is_iq4 = dtype == weight_dtype::iq4_nl || dtype == weight_dtype::iq4_xs;
    const double margin = dtype == weight_dtype::q2_k   ? 2.5e-3
                          : dtype == weight_dtype::q3_k ? 1.2e-3
                          : dtype == weight_dtype::q4_1 ? 5e-4
                          : is_iq4                      ? 3e-4
                                                        : 2e-4;
    for (int i = 0; i < 256; ++i) CHECK(back[i] == Approx(tiny[i]).epsilon(0.2).margin(margin));
  }
}

TEST_CASE("rows that are no whole number of blocks are an error value", "[core][quant]") {
  std::vector<float> x(48);
  std::vector<std::byte> q(64);
  const auto bad = quantize_row(weight_dtype::q8_0, x.data(), 48, q.data());
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().code == errc::invalid_argument);
  CHECK_FALSE(dequantize_row(weight_dtype::q4_k, q.data(), 128, x.data()).has_value());
  CHECK(quantize_row(weight_dtype::q8_0, x.data(), 32, q.data()).has_value());
}

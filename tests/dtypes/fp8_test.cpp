// FP8 E4M3 conversions (dtypes/fp8.hpp): every code round trips, ties go to even,
// magnitudes past 448 saturate, subnormals keep their 2^-9 steps, and any float lands on
// a nearest code.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "dtypes/fp8.hpp"

using namespace inflight;

TEST_CASE("every e4m3 code but NaN converts back to itself", "[dtypes][fp8]") {
  int finite = 0;
  for (int c = 0; c < 256; ++c) {
    const auto code = std::uint8_t(c);
    const float v = e4m3_to_float(code);
    if ((c & 0x7f) == 0x7f) {
      CHECK(std::isnan(v));
      continue;
    }
    ++finite;
    INFO("code " << c << " value " << v);
    REQUIRE(float_to_e4m3(v) == code);
  }
  REQUIRE(finite == 254);
  CHECK(e4m3_to_float(0x7e) == 448.0f);
  CHECK(e4m3_to_float(0x01) == 0x1p-9f);
  CHECK(e4m3_to_float(0x08) == 0x1p-6f);
  CHECK(e4m3_to_float(0x38) == 1.0f);
  CHECK(e4m3_to_float(0xb8) == -1.0f);
}

TEST_CASE("float to e4m3 rounds to nearest even and saturates", "[dtypes][fp8]") {
  CHECK(float_to_e4m3(1.0625f) == 0x38);       // halfway 1 | 1.125: even (1)
  CHECK(float_to_e4m3(1.1875f) == 0x3a);       // halfway 1.125 | 1.25: even (1.25)
  CHECK(float_to_e4m3(1.07f) == 0x39);         // past halfway
  CHECK(float_to_e4m3(0x1p-10f) == 0x00);      // half the smallest subnormal: even (0)
  CHECK(float_to_e4m3(3 * 0x1p-10f) == 0x02);  // 1.5 units: even (2)
  CHECK(float_to_e4m3(0x1.fp-7f) == 0x08);     // rounds up into the smallest normal
  CHECK(float_to_e4m3(15.5f) == 0x58);         // halfway 15 | 16: even (16, the next exponent)
  CHECK(float_to_e4m3(450.0f) == 0x7e);
  CHECK(float_to_e4m3(1e9f) == 0x7e);
  CHECK(float_to_e4m3(-INFINITY) == 0xfe);
  CHECK(float_to_e4m3(std::nanf("")) == 0x7f);
  CHECK(float_to_e4m3(-0.0f) == 0x80);
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> exponent(-12.0f, 9.5f);
  for (int i = 0; i < 20000; ++i) {
    const float x = std::ldexp(1.0f, 0) * std::exp2(exponent(rng)) * (i % 2 ? -1.0f : 1.0f);
    const auto code = float_to_e4m3(x);
    const float got = e4m3_to_float(code);
    if (std::fabs(x) >= e4m3_max) {
      REQUIRE(got == std::copysign(e4m3_max, x));
      continue;
    }
    // No code other than `code`'s neighbours is nearer.
    for (const int d : {-1, 1}) {
      const int other = int(code & 0x7f) + d;
      if (other < 0 || other > 0x7e) continue;
      const float o = e4m3_to_float(std::uint8_t((code & 0x80) | other));
      INFO("x " << x << " code " << int(code) << " neighbour " << o);
      REQUIRE(std::fabs(got - x) <= std::fabs(o - x));
    }
  }
}

// fp16 / bf16 conversions: known bit patterns, round-to-nearest-even ties, range limits.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "miniquant/half.h"

using namespace mq;

TEST_CASE("fp16 bit patterns") {
  CHECK(f32_to_f16(1.0f) == 0x3C00);
  CHECK(f32_to_f16(-2.0f) == 0xC000);
  CHECK(f32_to_f16(65504.0f) == 0x7BFF);
  CHECK(f32_to_f16(65520.0f) == 0x7C00);               // halfway to the next binade rounds to inf
  CHECK(f32_to_f16(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(f32_to_f16(std::ldexp(1.0f, -26)) == 0x0000);  // below half of it: zero
  CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);      // tie -> even (down)
  CHECK(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);  // tie -> even (up)
  CHECK(std::isnan(f16_to_f32(f32_to_f16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(f16_to_f32(0x3555) == 0.333251953125f);  // (1 + 341/1024) * 2^-2, exact
}

TEST_CASE("bf16 bit patterns") {
  CHECK(f32_to_bf16(1.0f) == 0x3F80);
  CHECK(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);      // tie -> even
  CHECK(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82);  // tie -> even
  CHECK(bf16_to_f32(0x4049) == 3.140625f);
}

TEST_CASE("every fp16 value survives fp16 -> fp32 -> fp16") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    REQUIRE(f32_to_f16(f) == h);
  }
}

// Nibble and bit order of packed codes, and pack/unpack round trips for every width.
#include <doctest/doctest.h>

#include <vector>

#include "miniquant/pack.h"
#include "miniquant/random.h"

using namespace mq;

TEST_CASE("int4: field 2j in the low nibble, 2j+1 in the high nibble, odd tail zero-padded") {
  const std::vector<uint8_t> f = {0x1, 0x2, 0x3, 0xF, 0x7};
  std::vector<uint8_t> out(3, 0xAA);
  pack_fields(f.data(), 5, 4, out.data());
  CHECK(out == std::vector<uint8_t>{0x21, 0xF3, 0x07});
}

TEST_CASE("int2 and int3 follow the little-endian bit stream") {
  const std::vector<uint8_t> f2 = {1, 2, 3, 0, 3};
  std::vector<uint8_t> out2(2, 0xAA);
  pack_fields(f2.data(), 5, 2, out2.data());
  CHECK(out2 == std::vector<uint8_t>{0x39, 0x03});  // 01 | 10<<2 | 11<<4 | 00<<6 = 0x39

  // 3-bit fields 5, 6, 7: bits 0-2 = 101, 3-5 = 110, 6-8 = 111 (field 2 straddles into byte 1).
  const std::vector<uint8_t> f3 = {5, 6, 7};
  std::vector<uint8_t> out3(2, 0xAA);
  pack_fields(f3.data(), 3, 3, out3.data());
  CHECK(out3 == std::vector<uint8_t>{0xF5, 0x01});
  CHECK(field_at(out3.data(), 2, 3) == 7);
}

TEST_CASE("pack then unpack is the identity for every width and odd lengths") {
  Rng rng(42);
  for (int bits = 1; bits <= 8; ++bits) {
    for (int64_t n : {0, 1, 2, 3, 7, 8, 9, 63, 64, 65, 1001}) {
      CAPTURE(bits);
      CAPTURE(n);
      std::vector<uint8_t> f(static_cast<size_t>(n));
      for (auto& v : f) v = static_cast<uint8_t>(rng.below(1u << bits));
      std::vector<uint8_t> packed(static_cast<size_t>((n * bits + 7) / 8) + 1, 0xEE);  // +1 guard byte
      pack_fields(f.data(), n, bits, packed.data());
      CHECK(packed.back() == 0xEE);  // nothing written past the row
      std::vector<uint8_t> back(static_cast<size_t>(n));
      unpack_fields(packed.data(), n, bits, back.data());
      CHECK(back == f);
      for (int64_t i = 0; i < n; ++i) REQUIRE(field_at(packed.data(), i, bits) == f[static_cast<size_t>(i)]);
    }
  }
}

// Scheme names both ways, shape checks, and exact byte accounting against hand-computed values.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/format.h"
#include "miniquant/format_table.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/ref.h"
#include "miniquant/kquant.h"
#include "miniquant/quantize.h"
#include "miniquant/random.h"

using namespace mq;

TEST_CASE("every scheme of the table prints a name that parses back to it") {
  for (const Scheme& s : scheme_table()) {
    CAPTURE(s.name());
    CHECK(Scheme::parse(s.name()) == s);
  }
}

TEST_CASE("names follow the documented grammar") {
  CHECK(Scheme::parse("int4-g64") == Scheme::integer(4, 64));
  CHECK(Scheme::parse("int8-per-channel") == Scheme::integer(8, kPerChannel));
  CHECK(Scheme::parse("int8-per-tensor") == Scheme::integer(8, kPerTensor));
  CHECK(Scheme::parse("int4-g128-asym") == Scheme::integer(4, 128, false));
  CHECK(Scheme::parse("int3-g32") == Scheme::integer(3, 32));
  CHECK(Scheme::parse("int2-per-channel-asym") == Scheme::integer(2, kPerChannel, false));
  CHECK(Scheme::parse("int4-g96").group == 96);  // any group size parses; the shape decides later
  CHECK(Scheme::integer(4, 128, false).name() == "int4-g128-asym");
  CHECK(Scheme::bf16().name() == "bf16");
}

TEST_CASE("unknown names are usage errors that list the valid ones") {
  for (const char* bad : {"int5-g64", "int4", "int4-g0", "int4-g-64", "int4-g64-sym", "fp8", "INT4-G64", "int4-g64x", ""}) {
    CAPTURE(bad);
    try {
      Scheme::parse(bad);
      FAIL("parsed");
    } catch (const UsageError& e) {
      const std::string msg = e.what();
      CHECK(msg.find("unknown scheme") != std::string::npos);
      CHECK(msg.find("int4-g64") != std::string::npos);
      CHECK(msg.find("int8-per-channel") != std::string::npos);
    }
  }
}

TEST_CASE("a scheme's identity is its family's row of the format table, not its width") {
  const std::vector<FormatTraits>& t = format_table();
  for (const Scheme& s : scheme_table()) {
    CAPTURE(s.name());
    REQUIRE(s.family < t.size());
    CHECK(&traits_of(s) == &t[s.family]);
    CHECK(t[s.family].kind == s.kind);
    CHECK(t[s.family].bits == s.bits);
  }
  // Every row is some scheme's family, and the integer constructors name the family.
  for (size_t i = 0; i < t.size(); ++i) {
    CAPTURE(t[i].family);
    bool used = false;
    for (const Scheme& s : scheme_table()) used = used || s.family == i;
    CHECK(used);
  }
  CHECK(Scheme::integer("int4", 64) == Scheme::integer(4, 64));
  CHECK(Scheme::integer("int3", kPerChannel, false).name() == "int3-per-channel-asym");
  CHECK_THROWS_AS(Scheme::integer("int5", 64), UsageError);
  CHECK_THROWS_AS(Scheme::integer(5, 64), UsageError);
  CHECK_THROWS_AS(Scheme::kquant(7), UsageError);
  // A scheme whose family does not match its kind and width is refused, not run as another family.
  Scheme forged = Scheme::integer(4, 64);
  forged.family = Scheme::integer(2, 64).family;
  CHECK_THROWS_AS(traits_of(forged), UsageError);
  forged.family = 255;
  CHECK_THROWS_AS(traits_of(forged), UsageError);
}

TEST_CASE("a group size that does not divide the input width names both numbers") {
  try {
    storage_of(Scheme::integer(4, 64), 8, 100);
    FAIL("accepted");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()) == "scheme int4-g64: group size 64 does not divide the input width 100");
  }
  CHECK_NOTHROW(storage_of(Scheme::integer(4, 100), 8, 100));  // the largest legal group
}

TEST_CASE("storage bytes match hand-computed values") {
  // 256 x 256 at int4-g64: 65,536 codes / 2 per byte; 256 rows * 4 groups * 2-byte fp16 scales.
  Storage st = storage_of(Scheme::integer(4, 64), 256, 256);
  CHECK(st.code_bytes == 32768);
  CHECK(st.scale_bytes == 2048);
  CHECK(st.zero_bytes == 0);
  CHECK(bits_per_weight(Scheme::integer(4, 64), 256, 256) == doctest::Approx(4.25));

  st = storage_of(Scheme::integer(4, 128, false), 256, 256);  // 512 zero-points of 4 bits
  CHECK(st.code_bytes == 32768);
  CHECK(st.scale_bytes == 1024);
  CHECK(st.zero_bytes == 256);

  CHECK(storage_of(Scheme::integer(8, kPerTensor), 256, 256).total() == 65536 + 2);
  CHECK(storage_of(Scheme::integer(8, kPerChannel), 256, 256).total() == 65536 + 512);
  CHECK(storage_of(Scheme::integer(8, kPerChannel, false), 256, 256).total() == 65536 + 512 + 256);
  CHECK(storage_of(Scheme::fp32(), 256, 256).total() == 262144);
  CHECK(storage_of(Scheme::fp16(), 256, 256).total() == 131072);
  CHECK(storage_of(Scheme::bf16(), 3, 5).total() == 30);
  // int3: 64 codes are 192 bits = 24 bytes per group; 256 rows * 4 groups.
  CHECK(storage_of(Scheme::integer(3, 64), 256, 256).code_bytes == 256 * 4 * 24);
  CHECK(storage_of(Scheme::integer(2, 64), 256, 256).code_bytes == 16384);
}

TEST_CASE("odd widths pad each row to a whole byte, and zero-point streams to a whole byte") {
  CHECK(row_code_bytes(Scheme::integer(4, kPerChannel), 5) == 3);  // 20 bits
  CHECK(row_code_bytes(Scheme::integer(3, kPerChannel), 7) == 3);  // 21 bits
  CHECK(row_code_bytes(Scheme::integer(2, kPerChannel), 1) == 1);
  const Storage st = storage_of(Scheme::integer(3, kPerChannel, false), 3, 7);
  CHECK(st.code_bytes == 9);
  CHECK(st.scale_bytes == 6);
  CHECK(st.zero_bytes == 2);  // 3 zero-points * 3 bits = 9 bits
  CHECK(storage_of(Scheme::integer(4, 1), 1, 1).total() == 1 + 2);  // 1 x 1 with a group of one
  CHECK(storage_of(Scheme::integer(8, kPerTensor), 0, 0).total() == 0);
}

TEST_CASE("format table: every scheme has one family, and gemm() on it equals the reference twin") {
  CHECK(mq::format_table().size() == 12);
  for (const mq::Scheme& s : mq::scheme_table()) {
    CAPTURE(s.name());
    const mq::FormatTraits& f = mq::traits_of(s);
    CHECK(f.kind == s.kind);
    CHECK(f.bits == s.bits);
    if (!s.is_integer() && !s.is_kquant()) CHECK(f.value_bytes * 8 == s.bits);
    CHECK((f.kquant != nullptr) == s.is_kquant());
    CHECK(mq::supports_dynamic(s) == (s.is_kquant() || s.is_integer()));
    // 3 tokens of a 16 x 256 matrix: the kernel gemm() selects against the scalar reference.
    mq::Rng rng(5);
    std::vector<float> w(16 * 256), x(3 * 256), y(3 * 16), yr(3 * 16);
    for (auto& v : w) v = static_cast<float>(rng.normal());
    for (auto& v : x) v = static_cast<float>(rng.normal());
    const mq::QTensor q = mq::quantize(w.data(), 16, 256, s);
    mq::gemm(q, x.data(), 3, y.data(), {.threads = 1});
    mq::gemm_ref(q, x.data(), 3, yr.data());
    // Both sum the same 256 products in float in different orders: each is within gamma_256 * sum|w'||x|
    // of the exact dot (gamma_k = k u / (1 - k u), u = 2^-24), so they differ by at most twice that.
    const std::vector<float> dq = mq::dequantize(q);
    const double gamma = 256 * 0x1p-24 / (1 - 256 * 0x1p-24);
    for (int t = 0; t < 3; ++t)
      for (int r = 0; r < 16; ++r) {
        double mag = 0;  // K: the kernel's terms D (q - zero) and M can cancel, so its scale is their magnitudes
        for (int c = 0; c < 256; ++c)
          mag += (s.is_kquant() ? mq::kmagnitude_at(q, r, c) : std::fabs(double(dq[r * 256 + c]))) * std::fabs(x[t * 256 + c]);
        CHECK(std::fabs(double(y[t * 16 + r]) - yr[t * 16 + r]) <= 2 * gamma * mag);
      }
  }
}

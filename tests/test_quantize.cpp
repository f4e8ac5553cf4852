// Quantizers: half-step round trip, granularity ordering, idempotence, optimized == reference,
// awkward shapes, and every bad input's message.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/grid_search.h"
#include "miniquant/half.h"
#include "miniquant/quantize.h"
#include "miniquant/quantize_detail.h"
#include "miniquant/random.h"

using namespace mq;

namespace {

// Gaussian rows whose magnitudes differ by up to 100x, as real weight rows do.
std::vector<float> uneven_rows(int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<float> w = gaussian_matrix(rows, cols, seed);
  Rng rng(seed + 1);
  for (int64_t r = 0; r < rows; ++r) {
    const float mag = static_cast<float>(std::pow(10.0, 2.0 * rng.uniform() - 1.0));
    for (int64_t c = 0; c < cols; ++c) w[r * cols + c] *= mag;
  }
  return w;
}

double rms_error(const std::vector<float>& w, const QTensor& q) {
  const std::vector<float> d = dequantize(q);
  double e = 0.0;
  for (size_t i = 0; i < w.size(); ++i) e += (double(w[i]) - d[i]) * (double(w[i]) - d[i]);
  return std::sqrt(e / static_cast<double>(w.size()));
}

std::vector<Scheme> integer_schemes() {
  std::vector<Scheme> out;
  for (const Scheme& s : scheme_table())
    if (s.is_integer()) out.push_back(s);
  return out;
}

void check_identical(const QTensor& a, const QTensor& b) {
  CHECK(a.codes == b.codes);
  CHECK(a.scales == b.scales);
  CHECK(a.zeros == b.zeros);
}

std::string error_of(const std::vector<float>& w, int64_t rows, int64_t cols, const Scheme& s, bool fast) {
  try {
    if (fast) quantize(w.data(), rows, cols, s, "blk.3.ffn_up");
    else quantize_ref(w.data(), rows, cols, s, "blk.3.ffn_up");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("every dequantized weight is within half a step of its input") {
  const int64_t rows = 48, cols = 256;
  const std::vector<float> w = uneven_rows(rows, cols, 42);
  for (const Scheme& s : integer_schemes()) {
    CAPTURE(s.name());
    const QTensor q = quantize(w.data(), rows, cols, s);
    const std::vector<float> d = dequantize(q);
    double worst = 0.0;  // in units of the element's step
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const double step = q.scale_at(r, c);
        REQUIRE(step > 0.0);
        worst = std::max(worst, std::fabs(double(w[r * cols + c]) - d[r * cols + c]) / step);
      }
    // Half a step, plus the float rounding of w / s (relative 2^-24 of at most 2^bits steps).
    CHECK(worst <= 0.5 + 1e-5);
  }
}

TEST_CASE("float storage rounds to the nearest representable value") {
  const std::vector<float> w = uneven_rows(16, 64, 7);
  const QTensor h = quantize(w.data(), 16, 64, Scheme::fp16());
  const QTensor b = quantize(w.data(), 16, 64, Scheme::bf16());
  const QTensor f = quantize(w.data(), 16, 64, Scheme::fp32());
  const std::vector<float> dh = dequantize(h), db = dequantize(b), df = dequantize(f);
  for (size_t i = 0; i < w.size(); ++i) {
    REQUIRE(df[i] == w[i]);
    REQUIRE(std::fabs(dh[i] - w[i]) <= std::fabs(w[i]) * std::ldexp(1.0, -11) + std::ldexp(1.0, -25));
    REQUIRE(std::fabs(db[i] - w[i]) <= std::fabs(w[i]) * std::ldexp(1.0, -8));
  }
}

TEST_CASE("finer granularity gives smaller error on rows of different magnitude") {
  const int64_t rows = 64, cols = 512;
  const std::vector<float> w = uneven_rows(rows, cols, 42);
  for (int bits : {8, 4}) {
    CAPTURE(bits);
    const double tensor = rms_error(w, quantize(w.data(), rows, cols, Scheme::integer(bits, kPerTensor)));
    const double channel = rms_error(w, quantize(w.data(), rows, cols, Scheme::integer(bits, kPerChannel)));
    const double g128 = rms_error(w, quantize(w.data(), rows, cols, Scheme::integer(bits, 128)));
    const double g64 = rms_error(w, quantize(w.data(), rows, cols, Scheme::integer(bits, 64)));
    CHECK(channel < tensor);
    CHECK(g128 < channel);
    CHECK(g64 < g128);
  }
  // The asymmetric grid spends its levels on [min, max] and never does worse on skewed data.
  std::vector<float> skewed = w;
  for (auto& v : skewed) v = std::fabs(v) + 0.1f;
  CHECK(rms_error(skewed, quantize(skewed.data(), rows, cols, Scheme::integer(4, 64, false))) <
        0.6 * rms_error(skewed, quantize(skewed.data(), rows, cols, Scheme::integer(4, 64))));
}

TEST_CASE("quantize(dequantize(q)) == q for symmetric and float schemes") {
  const int64_t rows = 32, cols = 256;
  const std::vector<float> w = uneven_rows(rows, cols, 3);
  for (const Scheme& s : scheme_table()) {
    if (s.is_integer() && !s.symmetric) continue;  // see the asymmetric case below
    if (s.is_kquant()) continue;  // a search may pick other parameters for the requantized values: test_kquant
    CAPTURE(s.name());
    const QTensor q = quantize(w.data(), rows, cols, s);
    const std::vector<float> d = dequantize(q);
    check_identical(quantize(d.data(), rows, cols, s), q);
  }
}

TEST_CASE("asymmetric: requantizing the dequantized weights reproduces them") {
  // The codes themselves need not repeat: when a group's top code is not used, the range of the
  // dequantized values is narrower and its fp16 scale differs. What must hold is that the values
  // the model sees survive the second pass within half of the new step.
  const int64_t rows = 32, cols = 256;
  const std::vector<float> w = uneven_rows(rows, cols, 3);
  for (const Scheme& s : integer_schemes()) {
    if (s.symmetric) continue;
    CAPTURE(s.name());
    const QTensor q = quantize(w.data(), rows, cols, s);
    const std::vector<float> d = dequantize(q);
    const QTensor q2 = quantize(d.data(), rows, cols, s);
    const std::vector<float> d2 = dequantize(q2);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        REQUIRE(std::fabs(d2[r * cols + c] - d[r * cols + c]) <= 0.5 * q2.scale_at(r, c) * (1 + 1e-5));
  }
}

TEST_CASE("optimized quantizer produces the reference's bytes on awkward shapes") {
  struct Case {
    int64_t rows, cols;
    const char* scheme;
  };
  const Case cases[] = {
      {1, 1, "int8-per-tensor"},   {1, 1, "int4-per-channel"}, {1, 1, "int4-g1"},        {1, 1, "int3-g1-asym"},
      {3, 64, "int4-g64"},         {5, 192, "int4-g64"},       {5, 192, "int4-g64-asym"}, {7, 384, "int4-g128"},
      {4, 256, "int4-g256"},       {9, 37, "int8-per-channel"}, {9, 37, "int3-per-channel"}, {9, 37, "int2-per-channel-asym"},
      {2, 33, "int4-per-channel"}, {11, 23, "int8-per-tensor"}, {6, 100, "int4-g100-asym"}, {3, 17, "fp16"},
      {3, 17, "bf16"},             {3, 17, "fp32"},
  };
  for (const Case& k : cases) {
    const Scheme s = Scheme::parse(k.scheme);
    CAPTURE(k.scheme);
    CAPTURE(k.rows);
    CAPTURE(k.cols);
    // One extra float in front: the optimized path must not assume aligned rows.
    std::vector<float> buf = uneven_rows(1, k.rows * k.cols + 1, 42 + static_cast<uint64_t>(k.cols));
    const float* w = buf.data() + 1;
    check_identical(quantize(w, k.rows, k.cols, s), quantize_ref(w, k.rows, k.cols, s));
  }
  // And the whole table on a bigger matrix.
  const std::vector<float> w = uneven_rows(64, 512, 5);
  for (const Scheme& s : scheme_table()) {
    CAPTURE(s.name());
    check_identical(quantize(w.data(), 64, 512, s), quantize_ref(w.data(), 64, 512, s));
  }
}

namespace {
// A chooser of its own for the test below: the plain grid of the group's range halved (so its codes differ from
// every grid the library picks by itself), counting its calls.
int g_half_range_calls = 0;
Grid half_range(const float* v, int64_t n, const float*, int64_t, const Scheme& s, std::string_view name, int64_t index) {
#pragma omp atomic
  ++g_half_range_calls;
  float lo = 0.0f, hi = 0.0f, absmax = 0.0f;
  for (int64_t i = 0; i < n; ++i) lo = std::min(lo, v[i]), hi = std::max(hi, v[i]), absmax = std::max(absmax, std::fabs(v[i]));
  return detail::grid_from(lo / 2, hi / 2, absmax / 2, s, name, index);
}
}  // namespace

TEST_CASE("a grid chooser decides every group's grid in both quantizers; search_grid as the chooser is -search") {
  const std::vector<float> w = uneven_rows(12, 256, 9);
  for (const std::string name : {"int4-g64", "int3-g32-asym", "int4-per-channel", "int8-per-tensor", "int2-g128"}) {
    CAPTURE(name);
    const Scheme s = Scheme::parse(name);
    const QTensor searched = quantize_ref(w.data(), 12, 256, s, {.search = true});
    // search_grid given as the chooser is the search, in both quantizers, whatever `search` says.
    check_identical(quantize_ref(w.data(), 12, 256, s, {.grid = &search_grid}), searched);
    check_identical(quantize(w.data(), 12, 256, s, {.search = false, .grid = &search_grid}), searched);
    // A chooser of its own: called once per scale, its grids stored, the same in both quantizers.
    g_half_range_calls = 0;
    const QTensor ref = quantize_ref(w.data(), 12, 256, s, {.grid = &half_range});
    CHECK(g_half_range_calls == s.scale_count(12, 256));
    check_identical(quantize(w.data(), 12, 256, s, {.grid = &half_range}), ref);
    CHECK(ref.scales != quantize_ref(w.data(), 12, 256, s).scales);
    if (s.group == kPerTensor) {
      CHECK(ref.scales.at(0) == half_range(w.data(), 12 * 256, nullptr, 256, s, "w", 0).scale_bits);
    } else {
      const int64_t gw = s.group_width(256), gpr = s.groups_per_row(256);
      for (int64_t i = 0; i < 12 * gpr; ++i)
        CHECK(ref.scales.at(static_cast<size_t>(i)) == half_range(w.data() + (i / gpr) * 256 + (i % gpr) * gw, gw, nullptr, gw, s, "w", i).scale_bits);
    }
  }
  // K families have no Grid: refused in one line by both quantizers.
  const Scheme k = Scheme::parse("q4_k");
  CHECK_THROWS_AS(quantize_ref(w.data(), 12, 256, k, {.search = true, .grid = &half_range}), UsageError);
  CHECK_THROWS_AS(quantize(w.data(), 12, 256, k, {.search = true, .grid = &half_range}), UsageError);
}

TEST_CASE("all-zero groups and rows get scale 0 and code 0") {
  std::vector<float> w = gaussian_matrix(4, 128, 1);
  for (int c = 0; c < 64; ++c) w[c] = 0.0f;               // row 0, group 0
  for (int c = 0; c < 128; ++c) w[2 * 128 + c] = 0.0f;  // row 2 entirely
  for (const char* name : {"int4-g64", "int4-g64-asym", "int8-per-channel", "int8-per-channel-asym"}) {
    const Scheme s = Scheme::parse(name);
    CAPTURE(name);
    for (bool fast : {false, true}) {
      const QTensor q = fast ? quantize(w.data(), 4, 128, s) : quantize_ref(w.data(), 4, 128, s);
      CHECK(q.scales[q.scale_index(2, 0)] == 0);
      for (int c = 0; c < 128; ++c) {
        CHECK(q.field_at(2, c) == q.zero_at(2, c));  // code 0
        CHECK(q.value_at(2, c) == 0.0f);
      }
      if (s.group == 64) CHECK(q.scales[q.scale_index(0, 0)] == 0);
    }
  }
  const std::vector<float> zeros(64, 0.0f);
  const QTensor q = quantize(zeros.data(), 1, 64, Scheme::integer(8, kPerTensor));
  CHECK(q.scales[0] == 0);
  CHECK(dequantize(q) == zeros);
}

TEST_CASE("tiny magnitudes (fp16-subnormal scales) still round within half a step") {
  std::vector<float> w = gaussian_matrix(4, 64, 9, 1e-6);
  for (const char* name : {"int8-per-channel", "int4-g64", "int4-g64-asym", "int2-g64"}) {
    const Scheme s = Scheme::parse(name);
    CAPTURE(name);
    const QTensor q = quantize(w.data(), 4, 64, s);
    check_identical(q, quantize_ref(w.data(), 4, 64, s));
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < 64; ++c)
        REQUIRE(std::fabs(w[r * 64 + c] - q.value_at(r, c)) <= 0.5f * q.scale_at(r, c) * (1 + 1e-5f));
  }
}

TEST_CASE("bad inputs give errors that name the tensor and the index") {
  std::vector<float> w = gaussian_matrix(3, 64, 2);
  for (bool fast : {false, true}) {
    CAPTURE(fast);
    std::vector<float> nan = w;
    nan[2 * 64 + 17] = std::numeric_limits<float>::quiet_NaN();
    CHECK(error_of(nan, 3, 64, Scheme::integer(4, 64), fast) == "tensor 'blk.3.ffn_up': non-finite weight nan at index (2, 17)");
    std::vector<float> inf = w;
    inf[5] = -std::numeric_limits<float>::infinity();
    CHECK(error_of(inf, 3, 64, Scheme::fp16(), fast) == "tensor 'blk.3.ffn_up': non-finite weight -inf at index (0, 5)");
    // The first bad element (row-major) is the one named.
    inf[64 + 1] = std::numeric_limits<float>::infinity();
    CHECK(error_of(inf, 3, 64, Scheme::fp16(), fast) == "tensor 'blk.3.ffn_up': non-finite weight -inf at index (0, 5)");

    CHECK(error_of(w, 3, 64, Scheme::integer(4, 128), fast) ==
          "tensor 'blk.3.ffn_up' (3x64): scheme int4-g128: group size 128 does not divide the input width 64");

    std::vector<float> big = w;
    big[64 + 3] = 1e5f;
    CHECK(error_of(big, 3, 64, Scheme::fp16(), fast) == "tensor 'blk.3.ffn_up': weight 100000 at index (1, 3) exceeds the fp16 range");
    CHECK(error_of(big, 3, 64, Scheme::bf16(), fast) == "no error");
    big[64 + 3] = 1e7f;  // int8 scale 1e7 / 127 does not fit fp16
    CHECK(error_of(big, 3, 64, Scheme::integer(8, kPerChannel), fast) ==
          "tensor 'blk.3.ffn_up', scale 1: scale 78740.2 (absmax 1e+07 / 127) exceeds the fp16 range (65504)");
  }
}

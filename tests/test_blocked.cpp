// The 16-row VNNI block layout of the dynamic kernels: pack / unpack round trip, what has a layout,
// and the blocked GEMM against gemm_dynamic_ref on shapes that reach every tile of the kernel
// (4-block single-token tiles, 8-token tiles, token and block remainders, padded rows and columns).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/format_table.h"
#include "miniquant/kernels/blocked.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/ref.h"
#include "miniquant/layers/linear.h"
#include "miniquant/random.h"
#include "act_codes.h"
#include "reduced_sizes.h"

using namespace mq;

namespace {

using actcodes::gamma;

// The block-layout schemes: every integer family, per-tensor, per-channel and grouped, symmetric and asymmetric.
std::vector<Scheme> blocked_schemes() {
  return {Scheme::integer(8, kPerTensor), Scheme::integer(8, kPerChannel), Scheme::integer(8, kPerChannel, false),
          Scheme::integer(8, 64),         Scheme::integer(4, 64),          Scheme::integer(4, 128, false),
          Scheme::integer(4, 32),         Scheme::integer(4, 8),           Scheme::integer(4, kPerChannel),
          Scheme::integer(3, 64),         Scheme::integer(3, 32, false),   Scheme::integer(3, 128),
          Scheme::integer(3, kPerChannel),
          Scheme::integer(2, 64),         Scheme::integer(2, 64, false),   Scheme::integer(2, 16),
          Scheme::integer(2, kPerChannel)};
}

// Runs gemm_blocked into y (n * rows outputs and one sentinel past them, which must survive: the padded rows of the
// last block are not stored) and returns the largest |y - ref| / bound. ref, bound: (n * rows).
template <class Ref>
double run_worst(const BlockedCodes& b, const std::vector<float>& x, int64_t n, int threads, bool isa, ActMode act,
                 const std::vector<Ref>& ref, const std::vector<double>& bound, std::vector<float>& y) {
  const int64_t outs = n * b.rows;
  y.assign(static_cast<size_t>(outs) + 1, -7.0f);
  gemm_blocked(b, x.data(), n, y.data(), threads, isa, act);
  CHECK(y.back() == -7.0f);
  y.pop_back();
  double worst = 0.0;
  for (int64_t i = 0; i < outs; ++i) worst = std::max(worst, std::fabs(double(y[i]) - double(ref[i])) / bound[i]);
  return worst;
}

}  // namespace

TEST_CASE("pack_blocked / unpack_blocked round-trip byte for byte") {
  for (const Scheme& s : blocked_schemes())
    for (int64_t rows : {int64_t{1}, int64_t{16}, int64_t{17}, int64_t{70}})
      for (int64_t cols : {int64_t{128}, int64_t{384}}) {
        CAPTURE(s.name());
        CAPTURE(rows);
        CAPTURE(cols);
        const std::vector<float> w = gaussian_matrix(rows, cols, 3 + static_cast<uint64_t>(rows));
        const QTensor q = quantize(w.data(), rows, cols, s);
        REQUIRE(blockable(q));
        const BlockedCodes b = pack_blocked(q);
        CHECK(b.blocks == (rows + 15) / 16);
        CHECK(b.codes.size() == static_cast<size_t>(b.blocks * 16 * cols * s.bits / 8));
        const QTensor u = unpack_blocked(b);
        CHECK(u.codes == q.codes);
        CHECK(u.scales == q.scales);
        CHECK(u.zeros == q.zeros);
      }
}

TEST_CASE("which tensors have a block layout") {
  const std::vector<float> w = gaussian_matrix(4, 96, 1);
  CHECK(blockable(quantize(w.data(), 4, 96, Scheme::integer(4, 32))));
  CHECK(blockable(quantize(w.data(), 4, 93, Scheme::integer(8, kPerChannel))));   // columns padded to 96
  CHECK_FALSE(blockable(quantize(w.data(), 4, 96, Scheme::integer(4, 12))));      // groups straddle k8 steps
  CHECK(blockable(quantize(w.data(), 4, 96, Scheme::integer(2, 16))));
  CHECK(blockable(quantize(w.data(), 4, 90, Scheme::integer(2, kPerChannel))));   // columns padded to 96
  CHECK_FALSE(blockable(quantize(w.data(), 4, 96, Scheme::integer(2, 8))));       // groups straddle k16 steps
  CHECK(blockable(quantize(w.data(), 4, 96, Scheme::integer(3, 32))));
  CHECK_FALSE(blockable(quantize(w.data(), 4, 96, Scheme::integer(3, 8))));       // groups straddle k16 steps
  CHECK_FALSE(blockable(quantize(w.data(), 4, 96, Scheme::fp16())));
  CHECK_THROWS_AS(pack_blocked(quantize(w.data(), 4, 96, Scheme::integer(4, 12))), UsageError);
  // int3 / int2: 16-column steps, per-channel rows padded to whole steps.
  for (int bits : {2, 3}) {
    const BlockedCodes b2 = pack_blocked(quantize(w.data(), 4, 96, Scheme::integer(bits, 16)));
    CHECK(b2.cols_pad == 96);
    const BlockedCodes p2 = pack_blocked(quantize(w.data(), 4, 90, Scheme::integer(bits, kPerChannel)));
    CHECK(p2.cols_pad == 96);
    CHECK(p2.group_k == 96);
  }
  // Per-channel rows wider than the int32 accumulators take fall back (to the reference) too.
  const std::vector<float> wide = gaussian_matrix(1, kMaxBlockedGroup + 8, 2);
  CHECK_FALSE(blockable(quantize(wide.data(), 1, kMaxBlockedGroup + 8, Scheme::integer(8, kPerChannel))));
  // gemm() on a tensor without a layout still gives the reference's numbers.
  const QTensor g12 = quantize(w.data(), 4, 96, Scheme::integer(4, 12));
  const std::vector<float> x = gaussian_matrix(2, 96, 9);
  std::vector<float> y(8), yr(8);
  gemm(g12, x.data(), 2, y.data(), {.act = ActMode::dynamic_int8});
  gemm_dynamic_ref(g12, x.data(), 2, yr.data());
  CHECK(y == yr);
}

TEST_CASE("blocked GEMM matches the dynamic reference on every tile shape, ISA path (VNNI or AVX2) and portable") {
  // Where the build has no ISA path for a family (dynamic_kernel_name(family) "portable": aarch64, x86 without AVX2,
  // int3 without VBMI) use_isa runs the same portable kernel, so it runs once. Reduced sizes (reduced_sizes.h): rows 5 and 70 (a partial block; a
  // 4-block tile and its remainder) and n up to 13 (an 8-token tile and its remainder), not rows 130 or n 64.
  const bool reduced = testsizes::reduced();
  MESSAGE("dynamic kernel path: " << std::string(dynamic_kernel_name("int4")) << " (int3: " << dynamic_kernel_name("int3")
                                  << ")" << (reduced ? " (reduced sizes)" : ""));
  const std::vector<int64_t> row_counts = reduced ? std::vector<int64_t>{5, 70} : std::vector<int64_t>{5, 70, 130};
  const std::vector<int64_t> token_counts = reduced ? std::vector<int64_t>{1, 2, 8, 13} : std::vector<int64_t>{1, 2, 8, 13, 64};
  double overall[2] = {0.0, 0.0};
  for (const ActMode act : {ActMode::dynamic_int8, ActMode::dynamic_int16})
  for (const Scheme& s : blocked_schemes()) {
    const bool isa_path = std::string(dynamic_kernel_name(traits_of(s).family)) != "portable";
    for (int64_t rows : row_counts)
      for (int64_t cols : {int64_t{128}, int64_t{256}}) {
        const bool wide = act == ActMode::dynamic_int16;
        const int64_t c = s.group > 0 ? cols : cols - 3;  // per-channel / per-tensor: padded columns
        const std::vector<float> w = gaussian_matrix(rows, c, 17 + static_cast<uint64_t>(rows));
        const QTensor q = quantize(w.data(), rows, c, s);
        const BlockedCodes b = pack_blocked(q);
        // With 16-bit activations the kernel runs each token as two int8 rows, so n = 1, 2, 4, ... reach
        // its 2-row decode tile (half the single-token tile's blocks), the 4-token tiles and remainders.
        for (int64_t n : token_counts) {
          const std::vector<float> x = gaussian_matrix(n, c, 5 + static_cast<uint64_t>(n));
          std::vector<float> yref(static_cast<size_t>(n * rows));
          gemm_dynamic_ref(q, x.data(), n, yref.data(), act);
          // Bound per output: actcodes::dynamic_bounds (exact int32 group dots, then gamma(2 gpr + 2 or 3) of
          // sum_i s |u_i - z| |a_i| * s_x).
          const std::vector<double> bound = actcodes::dynamic_bounds(q, x.data(), n, act);
          // The ISA path (VNNI or AVX2) and the portable twin do the same exact integer dots and the same
          // float steps in the same order: their outputs are identical, not merely within the bound.
          std::vector<float> y_isa[3];
          for (bool isa : {true, false})
            for (int threads : {1, 2}) {
              if (isa && !isa_path) continue;
              CAPTURE(s.name());
              CAPTURE(wide);
              CAPTURE(rows);
              CAPTURE(c);
              CAPTURE(n);
              CAPTURE(isa);
              CAPTURE(threads);
              std::vector<float> y;
              const double worst = run_worst(b, x, n, threads, isa, act, yref, bound, y);
              CHECK(worst <= 1.0);
              overall[wide] = std::max(overall[wide], worst);
              if (isa) y_isa[threads] = y;
              else if (isa_path) CHECK(y == y_isa[threads]);
            }
        }
      }
  }
  MESSAGE("worst error / bound vs reference: int8 activations " << overall[0] << ", 16-bit " << overall[1]);
}

TEST_CASE("16-bit activations: the split into two int8 halves is exact over the whole code range") {
  for (int32_t v = -kAct16Max; v <= kAct16Max; ++v) {
    int8_t h = 0, l = 0;
    split_act16(static_cast<int16_t>(v), h, l);
    if (256 * int32_t{h} + int32_t{l} != v || h < -127) {
      CAPTURE(v);
      FAIL("split_act16 does not reproduce the code");
    }
  }
  // The quantizer reaches both ends of the range and no further, and maps NaN / Inf and zero as the
  // int8 one does.
  std::vector<float> x = {0.5f, -2.0f, 1e-3f, 2.0f, 0.0f};
  std::vector<int16_t> a(x.size());
  const float sx = quantize_activations16(x.data(), 5, a.data());
  CHECK(sx == 2.0f / static_cast<float>(kAct16Max));
  CHECK(a[1] == -kAct16Max);
  CHECK(a[3] == kAct16Max);
  CHECK(a[4] == 0);
  CHECK(std::abs(a[0] * sx - 0.5f) <= sx / 2);
  std::fill(x.begin(), x.end(), 0.0f);
  CHECK(quantize_activations16(x.data(), 5, a.data()) == 0.0f);
  CHECK(a[2] == 0);
  x[2] = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(quantize_activations16(x.data(), 5, a.data())));
  CHECK(a[2] == 0);
}

TEST_CASE("QuantizedLinear in dynamic mode runs the blocked kernel and reports both sizes") {
  const std::vector<float> w = gaussian_matrix(40, 256, 4);
  const QuantizedLinear dyn(w.data(), 40, 256, Scheme::integer(4, 64), ActMode::dynamic_int8);
  const QTensor wo = quantize(w.data(), 40, 256, Scheme::integer(4, 64));
  CHECK(dyn.storage().total() == 40 * 128 + 40 * 4 * 2);
  CHECK(dyn.resident_bytes() == 48 * 128 + 48 * 4 * 2);  // one copy: the block layout, rows padded to 3 x 16
  CHECK(dyn.weight().codes == wo.codes);  // rebuilt from the blocks, byte for byte
  CHECK(dyn.weight().scales == wo.scales);
  CHECK(dyn.weight().name == "weight");
  CHECK_THROWS_AS(dyn.row_codes(0), UsageError);
  const std::vector<float> x = gaussian_matrix(3, 256, 8);
  std::vector<float> y(3 * 40), yr(3 * 40);
  dyn.forward(x.data(), 3, y.data());
  gemm_blocked(pack_blocked(dyn.weight()), x.data(), 3, yr.data(), 1);
  CHECK(y == yr);
  // 16-bit activations: the same layout and storage, the kernel's int16 mode.
  const QuantizedLinear d16(w.data(), 40, 256, Scheme::integer(4, 64), ActMode::dynamic_int16);
  CHECK(d16.resident_bytes() == dyn.resident_bytes());
  d16.forward(x.data(), 3, y.data());
  gemm_blocked(pack_blocked(d16.weight()), x.data(), 3, yr.data(), 1, true, ActMode::dynamic_int16);
  CHECK(y == yr);
  CHECK_THROWS_AS(QuantizedLinear(w.data(), 40, 256, Scheme::fp16(), ActMode::dynamic_int16), UsageError);  // floats have no dynamic kernel
}

namespace {
// The activation each weight-only mode multiplies: x' = hi + lo (weight_only) or bf16(x) (bf16), and its two
// halves' magnitudes |hi| + |lo| (the sums the kernel rounds).
void multiplied(const std::vector<float>& x, ActMode act, std::vector<double>& xm, std::vector<double>& mag) {
  xm.resize(x.size());
  mag.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    uint16_t hi = 0, lo = 0;
    split_bf16(x[i], hi, lo);
    if (act == ActMode::bf16) lo = 0;
    xm[i] = double(bf16_to_f32(hi)) + double(bf16_to_f32(lo));
    mag[i] = std::fabs(double(bf16_to_f32(hi))) + std::fabs(double(bf16_to_f32(lo)));
  }
}
}  // namespace

TEST_CASE("int8 / int4 / int3 / int2 weight-only and +bf16 on the block layout: W x' within float rounding, ISA path and twin") {
  // Products (u - z) * half are exact in fp32 (a 5-bit integer times a bf16; int8 runs each byte as its two
  // nibbles, 16 (hi - z / 16) + lo, two such products; from 8 or 16 tokens its dequantized tiles multiply u - z
  // itself, an 8-bit integer), so the only error is the fp32 accumulation: each output
  // meets at most 4 group_k + 2 groups + 4 roundings (a group's two partial sums, their sum, one fma per group;
  // asymmetric: the z * sum(x') start), of sum_k s m_k |half| with m_k the magnitudes summed: |u - z| (int4 / 3 / 2) or
  // |u - z| + 30 (int8 symmetric: |16 (hi - 8)| + lo <= |u - 128| + 30), plus 2 z for the asymmetric start.
  // Where the build has no ISA tile for the width (runs_blocked false: no AVX-512 BF16, or int3 without VBMI;
  // aarch64) use_isa runs the same twin, so it runs once. Reduced sizes (reduced_sizes.h): rows 5 and 130 and
  // n 1, 5, 19 (the one-token tile over 8 blocks and a single block, a 4-token tile and its remainder, int8's
  // dequantized tiles and their remainder), not rows 70 or 272 nor the other token counts.
  const bool reduced = testsizes::reduced();
  const std::vector<int64_t> row_counts = reduced ? std::vector<int64_t>{5, 130} : std::vector<int64_t>{5, 70, 130, 272};
  const std::vector<int64_t> token_counts =
      reduced ? std::vector<int64_t>{1, 5, 19} : std::vector<int64_t>{1, 2, 5, 7, 13, 17, 18, 19};
  double overall = 0.0;
  for (const ActMode act : {ActMode::weight_only, ActMode::bf16})
    for (const Scheme& s : blocked_schemes()) {
      for (int64_t rows : row_counts)
        for (int64_t cols : {int64_t{128}, int64_t{256}}) {
          const int64_t c = s.group > 0 ? cols : cols - 3;  // per-channel: padded columns
          const std::vector<float> w = gaussian_matrix(rows, c, 29 + static_cast<uint64_t>(rows));
          const QTensor q = quantize(w.data(), rows, c, s);
          const BlockedCodes b = pack_blocked(q);
          const int64_t gk = s.groups_per_row(c) > 1 ? s.group_width(c) : c;
          // n = 1 reaches the 8-block one-token tile (rows >= 128) and the single blocks; 2, 5, 7 the 4-token
          // tiles and every remainder tile; int8 from 8 tokens (weight-only) or 16 (+bf16) runs the dequantized
          // tiles (tile_deq): 13, 17, 18, 19 their 4-token tiles and remainders 1, 2, 3, 2-block and 1-block items.
          const bool isa_tile = runs_blocked(q, ActMode::weight_only);
          for (int64_t n : token_counts) {
            std::vector<float> x = gaussian_matrix(n, c, 11 + static_cast<uint64_t>(n));
            x[0] = 3e-39f;  // a denormal: vdpbf16ps counts its bf16 as zero, within the bound
            std::vector<double> xm, mag;
            multiplied(x, act, xm, mag);
            std::vector<double> exact(static_cast<size_t>(n * rows)), bound(exact.size());
            for (int64_t t = 0; t < n; ++t)
              for (int64_t r = 0; r < rows; ++r) {
                double e = 0.0, m = 0.0;
                for (int64_t k = 0; k < c; ++k) {
                  const double z = q.zero_at(r, k), u = q.field_at(r, k), sc = q.scale_at(r, k);
                  e += sc * (u - z) * xm[t * c + k];
                  m += sc * (std::fabs(u - z) + (s.bits == 8 && s.symmetric ? 30.0 : 0.0) + (s.symmetric ? 0.0 : 2.0 * z)) * mag[t * c + k];
                }
                exact[t * rows + r] = e;
                bound[t * rows + r] = gamma(4 * gk + 2 * s.groups_per_row(c) + 4) * m + 1e-37;
              }
            for (bool isa : {true, false})
              for (int threads : {1, 2}) {
                if (isa && !isa_tile) continue;
                CAPTURE(s.name());
                CAPTURE(act == ActMode::bf16);
                CAPTURE(rows);
                CAPTURE(c);
                CAPTURE(n);
                CAPTURE(isa);
                CAPTURE(threads);
                std::vector<float> y;
                const double worst = run_worst(b, x, n, threads, isa, act, exact, bound, y);
                CHECK(worst <= 1.0);
                overall = std::max(overall, worst);
              }
          }
        }
    }
  MESSAGE("worst error / bound: " << overall);
  CHECK(overall > 0.0);  // the bound is not vacuous: some rounding shows
}

TEST_CASE("int8 / int4 / int3 / int2 weight-only on the block layout: NaN, Inf and huge activations run fp32 on x as it is") {
  const std::vector<float> w = gaussian_matrix(20, 128, 3);
  for (const Scheme& s : {Scheme::integer(4, 64), Scheme::integer(8, kPerChannel), Scheme::integer(3, 64), Scheme::integer(2, 64)})
  for (const ActMode act : {ActMode::weight_only, ActMode::bf16}) {
    CAPTURE(s.name());
    const QTensor q = quantize(w.data(), 20, 128, s);
    const BlockedCodes b = pack_blocked(q);
    std::vector<float> x = gaussian_matrix(2, 128, 5);
    std::vector<float> y(40), yr(40);
    x[3] = std::numeric_limits<float>::quiet_NaN();  // token 0
    x[128 + 7] = std::numeric_limits<float>::infinity();  // token 1
    gemm_blocked(b, x.data(), 2, y.data(), 1, true, act);
    for (int64_t r = 0; r < 20; ++r) {
      CHECK(std::isnan(y[r]));
      CHECK_FALSE(std::isfinite(y[20 + r]));
    }
    // 2^127 cannot be split into bf16 halves: the call runs fp32 on x, which the fp32 reference matches.
    x = gaussian_matrix(2, 128, 6);
    x[5] = 0x1p127f;
    gemm_blocked(b, x.data(), 2, y.data(), 1, true, act);
    gemm_ref(q, x.data(), 2, yr.data());
    for (int64_t i = 0; i < 40; ++i) CHECK((y[i] == yr[i] || std::fabs(y[i] - yr[i]) <= 1e-5 * std::fabs(yr[i]) + 1e-30));  // == for the overflowed
  }
}

TEST_CASE("QuantizedLinear keeps int8 / int4 / int3 / int2 weight-only in the block layout where the bf16 kernels run") {
  const std::vector<float> w = gaussian_matrix(40, 256, 4);
  const QuantizedLinear wo(w.data(), 40, 256, Scheme::integer(4, 64));
  const QuantizedLinear wb(w.data(), 40, 256, Scheme::integer(4, 64), ActMode::bf16);
  const QuantizedLinear w2(w.data(), 40, 256, Scheme::integer(2, 64));
  const QuantizedLinear w8(w.data(), 40, 256, Scheme::integer(8, kPerChannel));
  const QuantizedLinear w3(w.data(), 40, 256, Scheme::integer(3, 64));
  const QuantizedLinear wf(w.data(), 40, 256, Scheme::fp16());
  const bool blocked = has_bf16_weight_path(Scheme::integer(4, 64));
  CHECK(runs_blocked(wo.weight(), ActMode::weight_only) == blocked);
  CHECK(runs_blocked(wo.weight(), ActMode::bf16) == blocked);
  CHECK(runs_blocked(w8.weight(), ActMode::weight_only) == blocked);
  CHECK(runs_blocked(w2.weight(), ActMode::weight_only) == blocked);
  CHECK(runs_blocked(w2.weight(), ActMode::dynamic_int8));  // the dynamic kernels read the same blocks
  CHECK(runs_blocked(w3.weight(), ActMode::dynamic_int8));
  CHECK(runs_blocked(w3.weight(), ActMode::weight_only) == (blocked && has_bf16_weight_path(Scheme::integer(3, 64))));  // int3 needs VBMI too
  CHECK_FALSE(runs_blocked(wf.weight(), ActMode::weight_only));   // floats have no block layout
  CHECK(wf.resident_bytes() == wf.storage().total());
  const std::vector<float> x = gaussian_matrix(3, 256, 8);
  std::vector<float> y(3 * 40), yr(3 * 40);
  if (blocked) {
    CHECK(wo.resident_bytes() == 48 * 128 + 48 * 4 * 2);  // rows padded to 3 x 16
    CHECK_THROWS_AS(wo.row_codes(0), UsageError);
    CHECK(wo.weight().codes == quantize(w.data(), 40, 256, Scheme::integer(4, 64)).codes);  // rebuilt byte for byte
    CHECK(w8.resident_bytes() == 48 * 256 + 48 * 2);
    CHECK(w2.resident_bytes() == 48 * 64 + 48 * 4 * 2);
    CHECK(w2.weight().codes == quantize(w.data(), 40, 256, Scheme::integer(2, 64)).codes);
    if (has_bf16_weight_path(Scheme::integer(3, 64))) {
      CHECK(w3.resident_bytes() == 48 * 96 + 48 * 4 * 2);
      CHECK(w3.weight().codes == quantize(w.data(), 40, 256, Scheme::integer(3, 64)).codes);
    }
    CHECK_THROWS_AS(gemm_blocked_bf16(pack_blocked(w8.weight()), x.data(), 3, yr.data(), 1, true, ActMode::dynamic_int8), UsageError);
    for (const QuantizedLinear* l : {&wo, &wb, &w8, &w2, &w3}) {
      l->forward(x.data(), 3, y.data());
      gemm_blocked(pack_blocked(l->weight()), x.data(), 3, yr.data(), 1, true, l->act());
      CHECK(y == yr);
    }
  } else {
    CHECK(wo.resident_bytes() == wo.storage().total());
    CHECK(w2.resident_bytes() == w2.storage().total());
    CHECK(wo.row_codes(1) == wo.row_codes(0) + 128);
  }
}

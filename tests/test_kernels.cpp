// Fast kernels (weight-only, dynamic int8 and 16-bit activations) against their scalar references and fp64,
// over every scheme of the table and awkward shapes, with tolerances derived from the arithmetic.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/format_table.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/kquant_decode.h"
#include "miniquant/kernels/kquant_ftile.h"
#include "miniquant/kernels/ref.h"
#include "miniquant/kernels/word_kernel.h"
#include "miniquant/kquant.h"
#include "miniquant/random.h"
#include "act_codes.h"

using namespace mq;

namespace {

using actcodes::gamma;  // the relative bound of k chained float roundings

// Widths worth testing for a scheme: one group, several groups, widths that are not a multiple of
// any SIMD block (the kernels' scalar tails), and odd widths where the scheme allows them.
std::vector<int64_t> widths_for(const Scheme& s) {
  if (s.is_kquant()) return {256, 768, 4096};  // whole super-blocks: one, three, sixteen
  if (s.is_integer() && s.group > 0) {
    const int64_t g = s.group;
    return {g, 3 * g, 16 * g};
  }
  return {1, 13, 100, 128, 333};
}

struct Case {
  QTensor q;
  std::vector<double> wq;   // (rows, cols) dequantized weights
  std::vector<double> mag;  // (rows, cols) |s| (u + z) for integers, |D| (q + zero) + |M| for K, |w'| for floats:
                            // the float-error weight
};

Case make_case(const Scheme& s, int64_t rows, int64_t cols, uint64_t seed) {
  const std::vector<float> w = gaussian_matrix(rows, cols, seed);
  Case c{quantize(w.data(), rows, cols, s), {}, {}};
  c.wq.resize(static_cast<size_t>(rows * cols));
  c.mag.resize(c.wq.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k) {
      const double v = c.q.value_at(r, k);
      c.wq[r * cols + k] = v;
      c.mag[r * cols + k] = s.is_integer()   ? c.q.scale_at(r, k) * double(c.q.field_at(r, k) + c.q.zero_at(r, k))
                            : s.is_kquant() ? kmagnitude_at(c.q, r, k)
                                            : std::fabs(v);
    }
  return c;
}

// Token t times row r in fp64 from the dequantized weights, and sum |mag| |x|, the scale of the
// float rounding errors.  x: (n, cols).
std::pair<double, double> exact_dot(const Case& c, const std::vector<float>& x, int64_t t, int64_t r) {
  const int64_t cols = c.q.cols;
  double exact = 0.0, bound = 0.0;
  for (int64_t k = 0; k < cols; ++k) {
    exact += c.wq[r * cols + k] * x[t * cols + k];
    bound += c.mag[r * cols + k] * std::fabs(x[t * cols + k]);
  }
  return {exact, bound};
}

// Largest |y - exact| / (gamma(cols + extra) * sum |mag| |x|) over all n x rows outputs of y (n, rows):
// 1 is the float-rounding bound of a product that meets cols + extra roundings.
double worst_over_bound(const Case& c, const std::vector<float>& x, int64_t n, const std::vector<float>& y, int64_t extra) {
  double worst = 0.0;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t r = 0; r < c.q.rows; ++r) {
      const auto [exact, bound] = exact_dot(c, x, t, r);
      worst = std::max(worst, std::fabs(y[t * c.q.rows + r] - exact) / (gamma(c.q.cols + extra) * bound + 1e-30));
    }
  return worst;
}

// The float-rounding bound of a dynamic kernel's output (`+a8` / `+a16`, act) for row r against gemm_dynamic_ref on
// the same activation codes: `roundings` roundings of sum_k mag_k |a_k| s_x, with am the codes' magnitudes and sx
// their scale (actcodes::quantize_magnitudes of the token).
double dynamic_fbound(const Case& c, int64_t r, const std::vector<double>& am, double sx, int64_t roundings) {
  const int64_t cols = c.q.cols;
  double fbound = 0.0;
  for (int64_t k = 0; k < cols; ++k) fbound += c.mag[r * cols + k] * am[k];
  return gamma(roundings) * sx * fbound + 1e-30;
}

// The float roundings of one K `+a8` output (kquant_dynamic.cpp): every exact four-byte lane sum is scaled by D_b and
// chained (cols / 4), the C_b sum_b a terms (cols / 16 at most), the lane and final sums and the token scale; from
// kEigenMinTokens tokens K runs the weight-only batch kernel on s a, a float dot of cols terms. cols + cols / 16 + 16
// covers both.
int64_t kdynamic_roundings(int64_t cols) { return cols + cols / 16 + 16; }

// True when gemm runs this scheme on the bf16 path (AVX-512 BF16 builds, use_isa): its activations are
// x' = hi + lo (split_bf16), so it is held to W x' (gemm_bf16_ref) with the float-rounding bound, and x' to x
// with split_bf16's 2^-16.
bool bf16_path(const Scheme& s, bool isa) {
  return isa && has_bf16_weight_path(s);
}
// x' = hi + lo of every activation.
std::vector<float> split_activations(const std::vector<float>& x) {
  std::vector<float> xs(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    xs[i] = bf16_pair_value(x[i]);
    CHECK(std::fabs(double(xs[i]) - double(x[i])) <= std::ldexp(std::fabs(double(x[i])), -16));
  }
  return xs;
}

// Runs gemm on misaligned copies of x and y (offset by one float) and returns y.
std::vector<float> run_misaligned(const QTensor& q, const std::vector<float>& x, int64_t n, const KernelOptions& o) {
  std::vector<float> xb(x.size() + 1), yb(static_cast<size_t>(n * q.rows) + 1, -1.0f);
  std::copy(x.begin(), x.end(), xb.begin() + 1);
  gemm(q, xb.data() + 1, n, yb.data() + 1, o);
  return {yb.begin() + 1, yb.end()};
}

}  // namespace

// Which instructions this build's kernels run, said once in the test output: the aarch64 build (preset
// `aarch64`, run under qemu-user) must run the xsimd decoders on NEON and the portable twins where a family
// has only x86 intrinsics.
TEST_CASE("kernel paths of this build, per family") {
  using namespace mq::kdetail;
  const std::string simd = simd_arch_name(), dynamic = dynamic_kernel_name("int4"), dynamic3 = dynamic_kernel_name("int3");
  // int8 / int4 / int2 share one path (the build's best); int3's is that one or, without VBMI, the portable twin.
  CHECK(dynamic_kernel_name("int8") == dynamic);
  CHECK(dynamic_kernel_name("int2") == dynamic);
  CHECK((dynamic3 == dynamic || dynamic3 == "portable"));
  CHECK_THROWS_AS(dynamic_kernel_name("q4_k"), Error);
  std::string bf16;
  for (int bits : {4, 3, 2})
    if (has_bf16_weight_path(Scheme::integer(bits, 64))) bf16 += (bf16.empty() ? "int" : ", int") + std::to_string(bits);
  // The x86 pieces of the weight-only decoders (isa_x86.h): where one is off, the xsimd-generic decoder runs.
  std::string x86;
  const auto piece = [&](bool on, const char* what) {
    if (on) x86 += (x86.empty() ? "" : ", ") + std::string(what);
  };
  piece(DecF16Wide::kAvailable, "fp16 vcvtph2ps");
  piece(DecInt8Wide::kAvailable, "int8 vpshufb");
  piece(DecInt4Perm::kAvailable, "int4 vpermps");
  piece(Int3Words::kAvailable, "int3 byte-shuffle load");
  piece(F16Run::kAvailable, "F16C group scales");
  piece(LaneSums::kAvailable, "lane-sum tree");
  MESSAGE("kernel paths: weight-only (fp32 / fp16 / bf16 / int8 / int4 / int3 / int2) and quantizer on xsimd " << simd
          << (x86.empty() ? std::string(", no x86 pieces") : ", x86 pieces: " + x86) << "; +a8 / +a16 (int8 / int4 / int2 blocks): "
          << dynamic << " (int3: " << dynamic3 << ")" << "; K +a8: " << std::string(kquant_dynamic_kernel_name()) << "; bf16 dot weight path: " << (bf16.empty() ? std::string("none, block-layout weight-only runs its portable twin") : bf16));
#if defined(__aarch64__)
  CHECK(simd == "arm64+neon");
  CHECK(x86.empty());
  CHECK(dynamic == "portable");  // no NEON dynamic kernel: Portable16's plain loops
  CHECK(dynamic3 == "portable");
  CHECK(std::string(kquant_dynamic_kernel_name()) == "portable");
  CHECK(bf16.empty());
#elif defined(__x86_64__)
  CHECK(simd != "arm64+neon");
#endif
}

TEST_CASE("weight-only kernels match the reference and fp64 for every scheme") {
  double overall = 0.0;
  std::string overall_where;
  for (const Scheme& s : scheme_table()) {
    for (int64_t cols : widths_for(s)) {
      for (int64_t rows : {int64_t{1}, int64_t{19}}) {
        const Case c = make_case(s, rows, cols, 42 + static_cast<uint64_t>(rows * 1000 + cols));
        const int64_t gpr = s.is_integer() ? s.groups_per_row(cols) : 1;
        for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{11}}) {
          const std::vector<float> x0 = gaussian_matrix(n, cols, 7 + static_cast<uint64_t>(n));
          const std::vector<float> xs = split_activations(x0);
          std::vector<float> yref0(static_cast<size_t>(n * rows)), yrefs(yref0.size());
          gemm_ref(c.q, x0.data(), n, yref0.data());
          gemm_bf16_ref(c.q, x0.data(), n, yrefs.data());
          for (int threads : {1, 2})
          for (bool isa : {true, false}) {
            // The bf16 path against its own reference and exact products on x' (the same float-rounding
            // bound); every other path on x.
            const bool b16 = bf16_path(s, isa);
            const std::vector<float>& x = b16 ? xs : x0;
            const std::vector<float>& yref = b16 ? yrefs : yref0;
            CAPTURE(s.name());
            CAPTURE(isa);
            CAPTURE(rows);
            CAPTURE(cols);
            CAPTURE(n);
            CAPTURE(threads);
            const std::vector<float> y = run_misaligned(c.q, x0, n, {.threads = threads, .use_isa = isa});
            double worst = 0.0;
            std::string where;
            for (int64_t t = 0; t < n; ++t)
              for (int64_t r = 0; r < rows; ++r) {
                auto [exact, bound] = exact_dot(c, x, t, r);
                // Every product meets at most cols + gpr + 16 float roundings (fma chains, lane sums,
                // group scaling, the z * sum(x) term) on its way into y: gamma of that count.
                bound = gamma(cols + gpr + 16) * bound + 1e-30;
                const double e = std::max(std::fabs(y[t * rows + r] - exact), std::fabs(yref[t * rows + r] - exact));
                if (e / bound > worst) {
                  worst = e / bound;
                  where = "token " + std::to_string(t) + " row " + std::to_string(r);
                }
              }
            CAPTURE(where);
            CHECK(worst <= 1.0);
            if (worst > overall) {
              overall = worst;
              overall_where = s.name() + " " + std::to_string(rows) + "x" + std::to_string(cols) + " n=" +
                              std::to_string(n) + " " + where;
            }
          }
        }
      }
    }
  }
  MESSAGE("worst error / bound " << overall << " at " << overall_where);
}

TEST_CASE("int3 weight-only: lane loads, group layouts and row tails beyond the table's schemes") {
  // The table's int3 schemes only have widths that are whole 64-field blocks (on 8 float lanes). Here:
  // per-tensor and per-channel with tails (cols not a multiple of the block: fields straddling bytes in
  // the scalar tail), 32-wide groups (two groups per block, lane scales), asymmetric zero-points, rows
  // that start mid-word in memory (3 * cols / 8 bytes per row), several 128-row sub-chunks of the
  // several-token path (300 rows, an odd last row), and both loads (the AVX2 shuffle and the
  // byte-by-byte portable one), on 1 and 2 threads. On AVX-512 BF16 + VBMI builds the isa runs are the bf16
  // path (96-byte blocks of 256 fields: 768 is three, 544 two and a 32-field tail in its own group), held
  // to W x' like int4's.
  for (const Scheme& s : {Scheme::integer(3, kPerTensor), Scheme::integer(3, kPerTensor, false), Scheme::integer(3, kPerChannel),
                          Scheme::integer(3, kPerChannel, false), Scheme::integer(3, 32), Scheme::integer(3, 32, false),
                          Scheme::integer(3, 64, false), Scheme::integer(3, 256)}) {
    for (int64_t cols : {int64_t{64}, int64_t{96}, int64_t{100}, int64_t{333}, int64_t{544}, int64_t{768}}) {
      if (s.group > 0 && cols % s.group != 0) continue;
      const int64_t rows = cols == 100 ? 301 : 9;
      const Case c = make_case(s, rows, cols, 11 + static_cast<uint64_t>(cols));
      const int64_t gpr = s.groups_per_row(cols);
      for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{9}}) {
        const std::vector<float> x = gaussian_matrix(n, cols, 5 + static_cast<uint64_t>(n));
        for (int threads : {1, 2})
        for (bool isa : {true, false}) {
          CAPTURE(s.name());
          CAPTURE(cols);
          CAPTURE(n);
          CAPTURE(threads);
          CAPTURE(isa);
          const std::vector<float> y = run_misaligned(c.q, x, n, {.threads = threads, .use_isa = isa});
          CHECK(worst_over_bound(c, bf16_path(s, isa) ? split_activations(x) : x, n, y, gpr + 16) <= 1.0);
        }
      }
    }
  }
}

TEST_CASE("+bf16 activations: W bf16(x) within float rounding, and within 2^-8 sum |w x| of fp32 activations") {
  // ActMode::bf16 rounds each activation once (kernels.h). Held to the exact product on bf16(x) with the
  // weight-only bound, and to W x with the stated 2^-8 sum |w x| on top. Every scheme of the table, so both the
  // one-bf16 kernels (int4 / int3 / int2 on AVX-512 BF16) and the rounded-copy path of the others run, isa and
  // portable; widths with scalar tails included.
  int64_t total = 0, differs = 0;
  double worst_stated = 0.0;
  for (const Scheme& s : scheme_table()) {
    for (int64_t cols : widths_for(s)) {
      const int64_t rows = 19;
      const Case c = make_case(s, rows, cols, 99 + static_cast<uint64_t>(cols));
      const int64_t gpr = s.is_integer() ? s.groups_per_row(cols) : 1;
      for (int64_t n : {int64_t{1}, int64_t{5}}) {
        const std::vector<float> x = gaussian_matrix(n, cols, 3 + static_cast<uint64_t>(n));
        std::vector<float> xr(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
          xr[i] = bf16_round(x[i]);
          CHECK(std::fabs(double(xr[i]) - double(x[i])) <= std::ldexp(std::fabs(double(x[i])), -8));
        }
        for (int threads : {1, 2})
        for (bool isa : {true, false}) {
          CAPTURE(s.name());
          CAPTURE(cols);
          CAPTURE(n);
          CAPTURE(threads);
          CAPTURE(isa);
          const std::vector<float> y = run_misaligned(c.q, x, n, {.threads = threads, .act = ActMode::bf16, .use_isa = isa});
          CHECK(worst_over_bound(c, xr, n, y, gpr + 16) <= 1.0);
          const std::vector<float> yw = run_misaligned(c.q, x, n, {.threads = threads, .use_isa = isa});
          for (int64_t t = 0; t < n; ++t)
            for (int64_t r = 0; r < rows; ++r) {
              const auto [exact, unused] = exact_dot(c, x, t, r);
              const auto [exact_r, bound_r] = exact_dot(c, xr, t, r);
              double wx = 0.0;  // sum |w x| over the dequantized weights
              for (int64_t k = 0; k < cols; ++k) wx += std::fabs(c.wq[r * cols + k] * x[t * cols + k]);
              const double stated = std::ldexp(wx, -8) + gamma(cols + gpr + 16) * bound_r + 1e-30;
              const double e = std::fabs(y[t * rows + r] - exact);
              CHECK(e <= stated);
              worst_stated = std::max(worst_stated, e / stated);
              ++total;
              differs += y[t * rows + r] != yw[t * rows + r];
            }
        }
      }
    }
  }
  MESSAGE("worst error / stated bound " << worst_stated << "; outputs that differ from weight-only: " << differs << " of " << total);
  // The mode must change what is multiplied: with Gaussian activations rounding moves nearly every output.
  CHECK(differs * 10 > total * 9);
}

TEST_CASE("+bf16 activations: NaN, Inf and huge activations run weight-only on x as it is") {
  for (const Scheme& s : {Scheme::integer(4, 64), Scheme::integer(3, 64), Scheme::integer(2, 64), Scheme::integer(8, kPerChannel)}) {
    CAPTURE(s.name());
    const Case c = make_case(s, 7, 512, 5);
    for (const float bad : {std::nanf(""), INFINITY, 0x1p127f}) {
      std::vector<float> x = gaussian_matrix(2, 512, 8);
      x[3] = bad;  // token 0 only
      const std::vector<float> y = run_misaligned(c.q, x, 2, {.threads = 1, .act = ActMode::bf16});
      const std::vector<float> yw = run_misaligned(c.q, x, 2, {.threads = 1});
      for (size_t i = 0; i < y.size(); ++i) {
        if (std::isnan(yw[i])) CHECK(std::isnan(y[i]));
        else CHECK(y[i] == yw[i]);
      }
    }
  }
}

TEST_CASE("int3 lane load: the ISA shuffle equals the portable byte-by-byte load") {
  // On builds with the bf16 int3 path the fp32 int3 kernel (and so this load) only runs for calls that
  // cannot be split (bf16_safe), so the load is checked on its own: every lane of blocks at each byte offset,
  // the block ending at the buffer's end (an over-read is an ASan error in the debug build).
  using namespace mq::kdetail;
  if constexpr (Int3Words::kAvailable) {
    constexpr int64_t kBytes = DecInt3::kBlockBytes;
    mq::Rng rng(42);
    for (int off = 0; off < 7; ++off) {
      std::vector<uint8_t> buf(static_cast<size_t>(off + kBytes));
      for (auto& b : buf) b = static_cast<uint8_t>(rng.below(256));
      alignas(64) uint32_t fast[L], slow[L];
      Int3Words::load(buf.data() + off).store_aligned(fast);
      DecInt3::load(buf.data() + off).store_aligned(slow);
      for (int64_t j = 0; j < L; ++j) {
        CAPTURE(off);
        CAPTURE(j);
        CHECK(fast[j] == slow[j]);
      }
    }
  } else {
    MESSAGE("no ISA int3 load in this build");
  }
}

TEST_CASE("batch 64 and many groups") {
  for (const Scheme& s : {Scheme::fp32(), Scheme::fp16(), Scheme::integer(4, 64), Scheme::integer(4, 32, false), Scheme::integer(8, kPerChannel),
                          Scheme::integer(3, 64), Scheme::integer(2, 64, false), Scheme::kquant(2), Scheme::kquant(3),
                          Scheme::kquant(4), Scheme::kquant(5), Scheme::kquant(6)}) {
    const int64_t rows = 5, cols = 1024, n = 64;
    const Case c = make_case(s, rows, cols, 3);
    const std::vector<float> x = gaussian_matrix(n, cols, 4);
    for (int threads : {1, 2}) {
      std::vector<float> y(static_cast<size_t>(n * rows), -1.0f);
      gemm(c.q, x.data(), n, y.data(), {.threads = threads});
      CAPTURE(s.name());
      CAPTURE(threads);
      CHECK(worst_over_bound(c, bf16_path(s, true) ? split_activations(x) : x, n, y, cols / 32 + 16) <= 1.0);
    }
  }
}

// Any bytes at all (a loaded file's), with finite fp16 factors: every decoder gives the generic unpack + kgrid's
// codes byte for byte and its grid bit for bit, the twin of the kernel's per-family decoders.
TEST_CASE("K decoders: the family's generic unpack and kgrid, exactly, on random bytes") {
  Rng rng(11);
  // Each family's decoder (the K registry rows' template arguments) against the family of its width.
  const auto check = [&](auto dec) {
    using Dec = decltype(dec);
    const KFamily& f = kfamily_of(Scheme::kquant(Dec::kBits));
    CAPTURE(f.name);
    {
      CHECK(Dec::kBits == f.bits);
      CHECK(Dec::kSub == f.sub);
      CHECK(Dec::kZero == f.zero);
      std::vector<uint8_t> block(static_cast<size_t>(f.block_bytes));
      for (int trial = 0; trial < 200; ++trial) {
        for (auto& b : block) b = static_cast<uint8_t>(rng.below(256));
        KParams p;
        f.unpack(block.data(), p, nullptr);
        const uint16_t fin = f32_to_f16(static_cast<float>(0.01 * rng.normal()));  // a finite factor
        if (!std::isfinite(f16_to_f32(p.d)) || !std::isfinite(f16_to_f32(p.dmin))) {  // rewrite d, dmin: finite
          KParams q = p;
          uint8_t codes[kSuperBlock];
          f.unpack(block.data(), q, codes);
          q.d = fin;
          q.dmin = f.has_min ? fin : uint16_t{0};
          f.pack(q, codes, block.data());
        }
        uint8_t want[kSuperBlock], got[kSuperBlock];
        f.unpack(block.data(), p, want);
        const KGrid g0 = kgrid(f, p);
        KGrid g;
        Dec::decode(block.data(), g, got);
        REQUIRE(std::memcmp(want, got, kSuperBlock) == 0);
        for (int b = 0; b < f.nsub(); ++b) {
          REQUIRE(std::memcmp(&g.D[b], &g0.D[b], sizeof(float)) == 0);
          REQUIRE(std::memcmp(&g.M[b], &g0.M[b], sizeof(float)) == 0);
        }
        float w[kSuperBlock], w0[kSuperBlock];
        kdecode::dequantize<Dec>(g, got, w);
        kdequantize_block(f, block.data(), w0);
        for (int i = 0; i < kSuperBlock; ++i) REQUIRE(w[i] == w0[i]);
#if MQ_KQUANT_FTILE
        alignas(64) float wt[kSuperBlock];
        kdetail::ftile::dequantize<Dec>(block.data(), wt);  // the 64-token tile's (q4_k's own: no code buffer)
        for (int i = 0; i < kSuperBlock; ++i) REQUIRE(std::memcmp(&wt[i], &w0[i], sizeof(float)) == 0);
#endif
      }
    }
  };
  check(kdecode::Q2K{});
  check(kdecode::Q3K{});
  check(kdecode::Q4K{});
  check(kdecode::Q5K{});
  check(kdecode::Q6K{});
}

// The K kernel's batch paths: its register tile over dequantized blocks on AVX-512 from 8 tokens (kquant_ftile.h:
// 12 rows x 32 tokens), dequantized panels with Eigen's GEMM elsewhere from kEigenMinTokens: around both thresholds,
// at 33 tokens (a full token group and a one-vector one) and 64 (two full groups), with row counts that leave a
// partial tile (20: 12 + 8) and a partial panel (panels are 256 rows at 256 and at 4096 columns), many blocks per
// row, and one row. Small shapes: the fp64 check is the cost (the sanitizer and qemu runs have it too).
TEST_CASE("K families at batch: the register tile / dequantized panels, within the float-rounding bound of fp64") {
  for (const FormatTraits& t : format_table()) {
    if (!t.kquant) continue;
    const Scheme s = Scheme::kquant(t.kquant->bits);
    for (const auto& shape : {std::pair<int64_t, int64_t>{1, 256}, {300, 256}, {20, 4096}}) {
      const int64_t rows = shape.first, cols = shape.second;  // not a structured binding: CAPTURE's lambda (clang 14)
      const Case c = make_case(s, rows, cols, 5);
      for (const int64_t n : {int64_t{7}, int64_t{8}, kdetail::kEigenMinTokens - 1, kdetail::kEigenMinTokens, int64_t{33}, int64_t{64}}) {
        const std::vector<float> x = gaussian_matrix(n, cols, 6 + static_cast<uint64_t>(n));
        for (int threads : {1, 2}) {
          CAPTURE(s.name());
          CAPTURE(rows);
          CAPTURE(n);
          CAPTURE(threads);
          const std::vector<float> y = run_misaligned(c.q, x, n, {.threads = threads});
          CHECK(worst_over_bound(c, x, n, y, cols / 16 + 16) <= 1.0);
        }
      }
    }
  }
}

// The K kernels below the batch paths, at every token count: on AVX-512 VNNI each of 1 .. 7 tokens is its own
// instantiation (kquant.cpp's fused_float_rows<Fused, kCodes, kN>, kquant_dynamic.cpp's fused_rows_n<Fused, kN> for 1 .. 4 and
// the any-count one above), so each count is run, weight-only against fp64 and `+a8` against its reference
// (gemm_dynamic_ref: the same int8 codes). 21 rows: one whole 16-row tile block and five rows of tail.
TEST_CASE("K families from one to 8 tokens: every token count's fused kernel within its bound") {
  for (const FormatTraits& t : format_table()) {
    if (!t.kquant) continue;
    const Scheme s = Scheme::kquant(t.kquant->bits);
    const int64_t rows = 21, cols = 512;
    const Case c = make_case(s, rows, cols, 17);
    for (int64_t n = 1; n <= 8; ++n) {
      const std::vector<float> x = gaussian_matrix(n, cols, 40 + static_cast<uint64_t>(n));
      std::vector<float> yref(static_cast<size_t>(n * rows));
      gemm_dynamic_ref(c.q, x.data(), n, yref.data(), ActMode::dynamic_int8);
      for (int threads : {1, 2}) {
        CAPTURE(s.name());
        CAPTURE(n);
        CAPTURE(threads);
        const std::vector<float> y = run_misaligned(c.q, x, n, {.threads = threads});
        CHECK(worst_over_bound(c, x, n, y, cols / 16 + 16) <= 1.0);
        // Against the reference on the same codes, the dynamic test's float-rounding bound for K (below).
        const auto worst_a8 = [&](const std::vector<float>& ya) {
          double worst = 0.0;
          std::vector<double> am;
          for (int64_t tk = 0; tk < n; ++tk) {
            const double sx = actcodes::quantize_magnitudes(x.data() + tk * cols, cols, ActMode::dynamic_int8, am);
            for (int64_t r = 0; r < rows; ++r) {
              const double fbound = dynamic_fbound(c, r, am, sx, kdynamic_roundings(cols));
              worst = std::max(worst, std::fabs(double(ya[tk * rows + r]) - double(yref[tk * rows + r])) / fbound);
            }
          }
          return worst;
        };
        CHECK(worst_a8(run_misaligned(c.q, x, n, {.threads = threads, .act = ActMode::dynamic_int8})) <= 1.0);
        // The AVX2 fused blocks, which the rows above run only on AVX2 CPUs without VNNI: held here on every build
        // that compiles them (weight-only at the 1 .. 7 tokens its entry is instantiated for; the rows give it 1 .. 3).
        if (kdetail::kquant_fused_avx2_built()) {
          std::vector<float> y2(static_cast<size_t>(n * rows), -1.0f);
          if (n < 8) {
            kdetail::gemm_kquant_fused_avx2_wo(c.q, x.data(), n, y2.data(), threads);
            CHECK(worst_over_bound(c, x, n, y2, cols / 16 + 16) <= 1.0);
          }
          kdetail::gemm_kquant_fused_avx2_a8(c.q, x.data(), n, y2.data(), threads);
          CHECK(worst_a8(y2) <= 1.0);
        }
      }
    }
  }
}

TEST_CASE("dynamic int8 and 16-bit activations: kernel vs reference vs fp64, VNNI / AVX2 and portable") {
  MESSAGE("VNNI path compiled in: " << std::string(has_vnni_path() ? "yes" : "no"));
  double overall_ref[2] = {0.0, 0.0}, overall_exact[2] = {0.0, 0.0};
  for (const ActMode act : {ActMode::dynamic_int8, ActMode::dynamic_int16})
  for (const Scheme& s : scheme_table()) {
    if (!supports_dynamic(s)) continue;
    const bool wide = act == ActMode::dynamic_int16;
    for (int64_t cols : widths_for(s)) {
      if (cols > 1100) continue;
      // K: two whole 16-row blocks for `+a8`'s tile path on VNNI, and five rows after them for its fused blocks.
      const int64_t rows = s.is_kquant() ? 37 : 9;
      const Case c = make_case(s, rows, cols, 11 + static_cast<uint64_t>(cols));
      const int64_t gpr = s.groups_per_row(cols);
      // K also from kEigenMinTokens tokens (`+a16`: the weight-only batch kernel on s a; `+a8` on VNNI: the tile path, two whole
      // passes of eight tokens at 16, a pass of one more at 17).
      const std::vector<int64_t> ns = s.is_kquant() ? std::vector<int64_t>{1, 3, 9, kdetail::kEigenMinTokens, kdetail::kEigenMinTokens + 1}
                                                    : std::vector<int64_t>{1, 3, 8, 9};
      for (int64_t n : ns) {
        const std::vector<float> x = gaussian_matrix(n, cols, 5 + static_cast<uint64_t>(n));
        std::vector<float> yref(static_cast<size_t>(n * rows));
        gemm_dynamic_ref(c.q, x.data(), n, yref.data(), act);
        for (bool isa : {true, false})
          for (int threads : {1, 2}) {
            CAPTURE(s.name());
            CAPTURE(wide);
            CAPTURE(cols);
            CAPTURE(n);
            CAPTURE(isa);
            CAPTURE(threads);
            const std::vector<float> y = run_misaligned(c.q, x, n, {.threads = threads, .act = act, .use_isa = isa});
            double worst_ref = 0.0, worst_exact = 0.0;
            std::vector<double> am;  // the codes' magnitudes (16-bit: 256 |h| + |l| of its two int8 halves)
            for (int64_t t = 0; t < n; ++t) {
              const double sx = actcodes::quantize_magnitudes(x.data() + t * cols, cols, act, am);
              for (int64_t r = 0; r < rows; ++r) {
                double exact = 0.0, abound = 0.0;
                for (int64_t k = 0; k < cols; ++k) {
                  exact += c.wq[r * cols + k] * x[t * cols + k];
                  abound += std::fabs(c.wq[r * cols + k]) * sx / 2;  // each a_i is off by at most half a step
                }
                // Group dots (zero-point term included) are exact int32; float roundings per output:
                // the int -> float conversion and one fma per group, then the token scale (16-bit: per
                // half, and one more for adding the halves). K: kdynamic_roundings.
                const int64_t roundings = s.is_kquant() ? kdynamic_roundings(cols) : 2 * gpr + (wide ? 3 : 2);
                const double fbound = dynamic_fbound(c, r, am, sx, roundings);
                const double yk = y[t * rows + r];
                worst_ref = std::max(worst_ref, std::fabs(yk - yref[t * rows + r]) / fbound);
                worst_exact = std::max(worst_exact, std::fabs(yk - exact) / (abound + fbound));
              }
            }
            CHECK(worst_ref <= 1.0);
            CHECK(worst_exact <= 1.0);
            overall_ref[wide] = std::max(overall_ref[wide], worst_ref);
            overall_exact[wide] = std::max(overall_exact[wide], worst_exact);
          }
      }
    }
  }
  MESSAGE("worst error / bound, int8 activations: vs reference " << overall_ref[0] << ", vs fp64 " << overall_exact[0]);
  MESSAGE("worst error / bound, 16-bit activations: vs reference " << overall_ref[1] << ", vs fp64 " << overall_exact[1]);
}

TEST_CASE("16-bit activations stay within their stated bound of fp32 activations, 256x inside int8's") {
  // The claim ActMode::dynamic_int16 makes (kernels.h): against the same weights with fp32 activations,
  // |y - W x| <= s_x / 2 * sum |w| plus float rounding, with s_x = absmax / 32639, 257x finer than int8's
  // absmax / 127. Measured on a realistic decode shape: the observed error must be under the bound and
  // far below int8 activations' observed error (the sum of many rounding errors partly cancels, so the
  // observed ratio is near the step ratio, 257, and well above 64).
  const Scheme s = Scheme::integer(4, 64);
  const int64_t rows = 64, cols = 2048;
  const Case c = make_case(s, rows, cols, 99);
  const std::vector<float> x = gaussian_matrix(1, cols, 98);
  std::vector<float> y8(rows), y16(rows);
  gemm(c.q, x.data(), 1, y8.data(), {.threads = 1, .act = ActMode::dynamic_int8});
  gemm(c.q, x.data(), 1, y16.data(), {.threads = 1, .act = ActMode::dynamic_int16});
  std::vector<double> am;
  const double sx = actcodes::quantize_magnitudes(x.data(), cols, ActMode::dynamic_int16, am);
  double e8 = 0.0, e16 = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const double exact = exact_dot(c, x, 0, r).first;
    double wsum = 0.0, fl = 0.0;  // sum |w|; the float-rounding scale sum_k mag_k (256 |h_k| + |l_k|) s_x
    for (int64_t k = 0; k < cols; ++k) {
      wsum += std::fabs(c.wq[r * cols + k]);
      fl += c.mag[r * cols + k] * am[k] * sx;
    }
    CHECK(std::fabs(y16[r] - exact) <= sx / 2 * wsum + gamma(2 * s.groups_per_row(cols) + 3) * fl);
    e8 += std::fabs(y8[r] - exact);
    e16 += std::fabs(y16[r] - exact);
  }
  MESSAGE("mean |error| over " << rows << " rows: int8 activations " << e8 / rows << ", 16-bit " << e16 / rows);
  CHECK(e16 > 0.0);
  CHECK(e8 / e16 > 64.0);
  CHECK(e8 / e16 < 1024.0);
}

TEST_CASE("bf16 activation split: the threshold and the 2^-16 bound at the edges") {
  const float below = std::nextafter(0x1p126f, 0.0f);
  const float ok[] = {1.0f, -below, 0.0f};
  CHECK(bf16_safe(ok, 3));
  for (const float bad : {0x1p126f, -0x1p127f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    const float xs[] = {1.0f, bad};
    CHECK_FALSE(bf16_safe(xs, 2));
  }
  // The largest safe value rounds up to 2^126 in bf16, still finite; lo carries the rest.
  for (const float v : {below, 1.0f + 0x1p-20f, 3.14159265f, -2.7182818e-20f, 0x1p-120f}) {
    uint16_t hi, lo;
    split_bf16(v, hi, lo);
    const double back = double(bf16_to_f32(hi)) + double(bf16_to_f32(lo));
    CAPTURE(v);
    CHECK(std::isfinite(bf16_to_f32(hi)));
    CHECK(std::fabs(back - double(v)) <= std::ldexp(std::fabs(double(v)), -16));
  }
}

TEST_CASE("kernel errors and degenerate shapes") {
  const std::vector<float> w = gaussian_matrix(4, 64, 1);
  const QTensor f16 = quantize(w.data(), 4, 64, Scheme::fp16());
  std::vector<float> x(64, 1.0f), y(4);
  CHECK_THROWS_AS(gemm(f16, x.data(), 1, y.data(), {.act = ActMode::dynamic_int8}), UsageError);
  CHECK_THROWS_AS(gemm(f16, x.data(), 1, y.data(), {.act = ActMode::dynamic_int16}), UsageError);
  CHECK_THROWS_AS(gemm(f16, x.data(), -1, y.data()), UsageError);
  const QTensor empty = quantize(w.data(), 4, 0, Scheme::integer(8, kPerChannel));
  std::fill(y.begin(), y.end(), 5.0f);
  gemm(empty, x.data(), 1, y.data());
  CHECK(y[3] == 0.0f);
  // An all-zero activation row quantizes to scale 0 and gives exact zeros.
  const QTensor q8 = quantize(w.data(), 4, 64, Scheme::integer(8, kPerChannel));
  std::fill(x.begin(), x.end(), 0.0f);
  gemm(q8, x.data(), 1, y.data(), {.act = ActMode::dynamic_int8});
  CHECK(y[0] == 0.0f);
  // A non-finite activation gives NaN outputs in both modes, never a silent number.
  gemm(q8, x.data(), 1, y.data(), {.act = ActMode::dynamic_int16});
  CHECK(y[0] == 0.0f);
  x[5] = std::numeric_limits<float>::infinity();
  gemm(q8, x.data(), 1, y.data(), {.act = ActMode::dynamic_int8});
  CHECK(std::isnan(y[2]));
  std::fill(y.begin(), y.end(), 0.0f);
  gemm(q8, x.data(), 1, y.data(), {.act = ActMode::dynamic_int16});
  CHECK(std::isnan(y[2]));
  x[5] = std::numeric_limits<float>::quiet_NaN();
  gemm(q8, x.data(), 1, y.data());
  CHECK(std::isnan(y[2]));
  // int4 / int3 / int2 weight-only (the bf16 path where the build has it): a NaN or Inf activation gives NaN
  // (the call runs the fp32 kernel, bf16_safe), never a number. 512 columns: whole blocks of every width,
  // the bad value in a block (column 300) or in the first one (7).
  const std::vector<float> wl = gaussian_matrix(4, 512, 2);
  std::vector<float> xl(512);
  for (const Scheme& s : {Scheme::integer(4, 32), Scheme::integer(3, 64), Scheme::integer(2, 64, false)}) {
    CAPTURE(s.name());
    const QTensor q = quantize(wl.data(), 4, 512, s);
    for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()})
      for (const int at : {7, 300}) {
        std::fill(xl.begin(), xl.end(), 1.0f);
        xl[at] = bad;
        std::fill(y.begin(), y.end(), 0.0f);
        gemm(q, xl.data(), 1, y.data());
        for (float v : y) CHECK(std::isnan(v));
      }
  }
}

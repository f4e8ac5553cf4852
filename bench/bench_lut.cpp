// A lookup-table kernel for int2 weight-only decode (T-MAC's idea: Wei et al., 2024, "T-MAC: CPU Renaissance via
// Table Lookup for Low-Bit LLM Deployment on Edge"), with fp32 tables, on the 16-row block layout (kernels/blocked.h),
// against the bf16-dot tile QuantizedLinear runs for int2 weight-only on AVX-512 BF16 (kernels/blocked_bf16.cpp),
// on the same packed tensor in interleaved rounds (the kernel itself is lut_kernel.h; vs_ggml times it against ggml's
// q2_K as the pair q2_K / int2-g64-table). A study, not a library kernel: on the CPU it was built on it did
// not beat the tile (bench/HISTORY.md, "Weight-only remainder tokens on the bf16 tile, and a lookup-table kernel for
// int2 measured"), so no registry row selects it; this program re-measures it on another CPU.
//
// The kernel. Two adjacent columns' 2-bit fields make a 4-bit index, so one 16-entry table per column pair holds
// every value the pair can add to a row's dot: T[u0 + 4 u1] = (u1 - z0) x1 + (u0 - z0) x0 (z0 the symmetric
// zero-point 2, or 0 for asymmetric schemes, whose groups start at -z sum(x) instead). A table is one zmm register and
// vpermps looks up 16 rows (a block's lanes) at once: per 32 weights a shift, a vpermps and an add, against the
// tile's shift, 32-entry word table (vpermw) and two vdpbf16ps (the activation split into bf16 hi + lo). In step s
// (16 columns) lane l's 32-bit word holds column c's field at bits 2c (Int2Family), so columns (2k, 2k + 1) are bits
// 4k .. 4k + 3: the index after a shift by 4k (vpermps reads the low 4 bits of each lane). A work item of 8 blocks
// loads each step's 8 tables once for its 8 blocks. The tables take 32 bytes per column per token (128 KB for a
// 4096-column token), built once per call; the tokens run one after another over an item.
// Arithmetic, the same in the AVX-512 tile and its portable twin (so the two agree bit for bit): each entry is
// fma(u1 - z0, x1, (u0 - z0) x0); a row's group sum adds the entries in column order onto its start (0, or
// -z * sum(x), the group's sum taken in double); the output is fma(group sum, scale, output) over the groups. The
// activations are multiplied as they are (no bf16 split): W x within the fp32 rounding of about group_k / 2 + groups
// additions. Its unscaled group sums can overflow where a scaled reference does not, for |x| near 2^126: a library
// kernel would hand such calls over (this study's activations are N(0, 1)).
//
// The program: for each shape, int2-g64 symmetric and asymmetric, 1 .. 4 tokens, 1 and 2 threads, it verifies first
// (the tile equals its twin bit for bit; both kernels are W x within 1e-4 of the largest |y| of gemm_ref), warms up,
// then times both kernels in `--rounds` rounds (order alternating), and reports each one's median time, the median
// per-round ratio with its sign-test 95% interval (mq::energy::robust_paired_ratio) and the table kernel's GB/s of
// packed weights. Hot only: the tensor is called again and again (its codes sit in L3 at 4096 columns).
//
// --portable times the table kernel against the row-major portable int2 kernel instead (gemm() with use_isa false,
// `run_any<DecInt<2>>`): the kernel a CPU with AVX-512 but without its BF16 dots runs for int2 weight-only, measured
// here as a stand-in for such a CPU (the same core, so only the instruction mix differs, not the machine).
//
//   ./build/bench/bench/bench_lut [--rounds 11] [--quick] [--portable]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "miniquant/energy/trial_stats.h"
#include "miniquant/kernels/blocked.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/ref.h"
#include "miniquant/quantize.h"
#include "miniquant/random.h"
#include "miniquant/util/timer.h"

#include "lut_kernel.h"    // the kernel (gemm_lut), shared with vs_ggml
#include "lut_kernel16.h"  // its 16-bit tables, verified here, timed by vs_ggml

namespace {

using namespace mq;

using mqbench::lut::gemm_lut;

bool verify(const BlockedCodes& b, const QTensor& q, const std::vector<float>& x, int64_t n, bool portable) {
  std::vector<float> lut(static_cast<size_t>(n * b.rows)), twin(lut.size()), dots(lut.size()), ref(lut.size());
  gemm_lut(b, x.data(), n, lut.data(), 1, true);
  gemm_lut(b, x.data(), n, twin.data(), 1, false);
  if (portable) gemm(q, x.data(), n, dots.data(), {.threads = 1, .use_isa = false});
  else gemm_blocked_bf16(b, x.data(), n, dots.data(), 1, true, ActMode::weight_only);
  gemm_ref(q, x.data(), n, ref.data());
  double top = 0.0, e_lut = 0.0, e_dots = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    top = std::max(top, std::fabs(double(ref[i])));
    e_lut = std::max(e_lut, std::fabs(double(lut[i]) - ref[i]));
    e_dots = std::max(e_dots, std::fabs(double(dots[i]) - ref[i]));
  }
  // The 16-bit tables (lut_kernel16.h): the tile equal to its twin, and within 1e-3 of the largest |y| (their entries'
  // rounding, about 1e-4 measured; vs_ggml holds them to the derived bound).
  std::vector<float> l16(lut.size()), t16(lut.size());
  mqbench::lut::gemm_lut16(b, x.data(), n, l16.data(), 1, true);
  mqbench::lut::gemm_lut16(b, x.data(), n, t16.data(), 1, false);
  double e16 = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) e16 = std::max(e16, std::fabs(double(l16[i]) - ref[i]));
  return lut == twin && e_lut <= 1e-4 * top && e_dots <= 1e-4 * top && l16 == t16 && e16 <= 1e-3 * top;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 11;
  bool quick = false, portable = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v < 6 || v > 1000) {
        std::fprintf(stderr, "bench_lut: --rounds takes a whole number from 6 to 1000, not '%s'\n", argv[i]);
        return 2;
      }
      rounds = static_cast<int>(v);
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--portable") {
      portable = true;
    } else {
      std::fprintf(stderr, "bench_lut: unknown argument '%s' (usage: bench_lut [--rounds N] [--quick] [--portable])\n", a.c_str());
      return 2;
    }
  }
  struct Shape { int64_t rows, cols; };
  const std::vector<Shape> shapes = quick ? std::vector<Shape>{{4096, 4096}} : std::vector<Shape>{{4096, 4096}, {11008, 4096}, {4096, 11008}};
  const std::vector<Scheme> schemes = {Scheme::integer(2, 64), Scheme::integer(2, 64, false)};
  const char* other = portable ? "row-major portable" : "bf16-dot";
  std::printf("| shape (rows x cols) | scheme | tokens | threads | table us | %s us | %s / table [95%%] | table GB/s |\n", other, other);
  std::printf("|---|---|---:|---:|---:|---:|---:|---:|\n");
  int failed = 0;
  for (const Shape& sh : shapes)
    for (const Scheme& s : schemes) {
      Rng rng(42);
      std::vector<float> w(static_cast<size_t>(sh.rows * sh.cols));
      for (float& v : w) v = static_cast<float>(rng.normal());
      const QTensor q = quantize(w.data(), sh.rows, sh.cols, s);
      const BlockedCodes b = pack_blocked(q);
      for (int64_t n = 1; n <= 4; ++n) {
        std::vector<float> x(static_cast<size_t>(n * sh.cols)), y(static_cast<size_t>(n * sh.rows));
        for (float& v : x) v = static_cast<float>(rng.normal());
        if (!verify(b, q, x, n, portable)) {
          std::fprintf(stderr, "bench_lut: %s %lldx%lld n=%lld failed verification\n", s.name().c_str(), static_cast<long long>(sh.rows),
                       static_cast<long long>(sh.cols), static_cast<long long>(n));
          ++failed;
          continue;
        }
        for (int threads : {1, 2}) {
          const auto table = [&] { gemm_lut(b, x.data(), n, y.data(), threads, true); };
          const auto dots = [&] {
            if (portable) gemm(q, x.data(), n, y.data(), {.threads = threads, .use_isa = false});
            else gemm_blocked_bf16(b, x.data(), n, y.data(), threads, true, ActMode::weight_only);
          };
          // Warm-up (caches, the thread pool, the tables' buffer) and each kernel's calls per round: about 20 ms.
          const int64_t kt = time_call(table, 1).calls_per_rep, kd = time_call(dots, 1).calls_per_rep;
          std::vector<double> tt, td;
          for (int r = 0; r < rounds; ++r) {
            if (r % 2 == 0) {
              tt.push_back(seconds_per_call(table, kt));
              td.push_back(seconds_per_call(dots, kd));
            } else {
              td.push_back(seconds_per_call(dots, kd));
              tt.push_back(seconds_per_call(table, kt));
            }
          }
          const energy::Ratio ratio = energy::robust_paired_ratio(td, tt);
          // Seconds per call, printed in microseconds.
          const double mt = summarize(tt, kt).median * 1e6, md = summarize(td, kd).median * 1e6;
          std::printf("| %lldx%lld | %s | %lld | %d | %.1f | %.1f | %.2fx [%.2f, %.2f] | %.1f |\n", static_cast<long long>(sh.rows),
                      static_cast<long long>(sh.cols), s.name().c_str(), static_cast<long long>(n), threads, mt, md, ratio.ratio,
                      ratio.low, ratio.high, double(b.bytes()) / mt / 1e3);
          std::fflush(stdout);
        }
      }
    }
  if (failed) std::fprintf(stderr, "bench_lut: %d cells failed verification\n", failed);
  return failed ? 1 : 0;
}

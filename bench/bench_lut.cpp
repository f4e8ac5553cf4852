// A lookup-table kernel for int2 weight-only decode (T-MAC's idea: Wei et al., 2024, "T-MAC: CPU Renaissance via
// Table Lookup for Low-Bit LLM Deployment on Edge"), with fp32 tables, on the 16-row block layout (kernels/blocked.h),
// against the bf16-dot tile QuantizedLinear runs for int2 weight-only on AVX-512 BF16 (kernels/blocked_bf16.cpp),
// on the same packed tensor in interleaved rounds. A study, not a library kernel: on the CPU it was built on it did
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

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "miniquant/aligned.h"
#include "miniquant/energy/trial_stats.h"
#include "miniquant/half.h"
#include "miniquant/kernels/blocked.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/ref.h"
#include "miniquant/quantize.h"
#include "miniquant/random.h"
#include "miniquant/util/timer.h"

namespace {

using namespace mq;

constexpr int64_t kPairs = Int2Family::kColumns / 2;  // column pairs (tables) per step

// One call's tables. tab: (n, cols_pad / 2, 16) floats, pair p of token t = columns 2p, 2p + 1 (zero past cols);
// sum: (n, groups) each group's activation sum, asymmetric schemes only.
struct LutActs {
  int64_t n = 0, pairs = 0;
  mq::AlignedVector<float> tab;
  std::vector<float> sum;
};

// The calling thread's tables for x (n, cols): assign keeps the capacity, so a warm decode call allocates nothing.
const LutActs& make_tables(const BlockedCodes& w, const float* x, int64_t n) {
  thread_local LutActs a;
  a.n = n;
  a.pairs = w.cols_pad / 2;
  a.tab.assign(static_cast<size_t>(n * a.pairs * 16), 0.0f);
  a.sum.assign(w.scheme.symmetric ? 0 : static_cast<size_t>(n * w.groups), 0.0f);
  const float z0 = w.scheme.symmetric ? static_cast<float>(w.zero_sym) : 0.0f;
  alignas(64) float c0[16], c1[16];  // entry i's two field values minus z0
  for (int i = 0; i < 16; ++i) {
    c0[i] = static_cast<float>(i & 3) - z0;
    c1[i] = static_cast<float>(i >> 2) - z0;
  }
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x + t * w.cols;
    float* tt = a.tab.data() + t * a.pairs * 16;
    int64_t p = 0;
#if defined(__AVX512F__)
    const __m512 v0 = _mm512_load_ps(c0), v1 = _mm512_load_ps(c1);
    for (; p < w.cols / 2; ++p)  // pairs with both columns inside the row
      _mm512_store_ps(tt + 16 * p, _mm512_fmadd_ps(v1, _mm512_set1_ps(xt[2 * p + 1]), _mm512_mul_ps(v0, _mm512_set1_ps(xt[2 * p]))));
#endif
    for (; p < a.pairs; ++p) {
      const float x0 = 2 * p < w.cols ? xt[2 * p] : 0.0f, x1 = 2 * p + 1 < w.cols ? xt[2 * p + 1] : 0.0f;
      for (int i = 0; i < 16; ++i) tt[16 * p + i] = std::fma(c1[i], x1, c0[i] * x0);
    }
    for (int64_t g = 0; g < (a.sum.empty() ? 0 : w.groups); ++g) {
      double s = 0.0;  // exact enough that the z * sum(x) term adds no error of its own order
      for (int64_t c = g * w.group_k; c < std::min(w.cols, (g + 1) * w.group_k); ++c) s += xt[c];
      a.sum[t * w.groups + g] = static_cast<float>(s);
    }
  }
  return a;
}

// The portable twin: the same entries looked up field by field from the block layout, the same sums in the same order.
void lut_twin(const BlockedCodes& w, const LutActs& a, float* y, int threads) {
  const int64_t steps = w.group_k / Int2Family::kColumns;
  for_each_block_output(w, a.n, y, threads, [&](int64_t b, int64_t t, int l) {
    const uint8_t* codes = w.block_codes(b);
    float out = 0.0f;
    for (int64_t g = 0; g < w.groups; ++g) {
      float p = w.scheme.symmetric ? 0.0f : static_cast<float>(w.block_zeros(b, g)[l]) * -a.sum[t * w.groups + g];
      for (int64_t q = g * steps * kPairs; q < (g + 1) * steps * kPairs; ++q) {
        const int u0 = block_field(codes, Int2Family::slot(l, 2 * q), 2), u1 = block_field(codes, Int2Family::slot(l, 2 * q + 1), 2);
        p += a.tab[static_cast<size_t>((t * a.pairs + q) * 16 + u0 + 4 * u1)];
      }
      out = std::fma(p, f16_to_f32(w.block_scales(b, g)[l]), out);
    }
    return out;
  });
}

#if defined(__AVX512F__)
// R blocks (16 R rows) for token t: per group, per step, per column pair k: one table register, and for each block
// its lane words shifted by 4k into the table (vpermps), added onto the block's group sum.
template <int R, bool Sym>
void tile(const BlockedCodes& w, int64_t b0, const LutActs& a, int64_t t, float* y) {
  constexpr int64_t kStep = sizeof(Int2Family::Step);  // 64 bytes: 16 lanes x 16 columns
  const int64_t steps = w.group_k / Int2Family::kColumns;
  const float* tab = a.tab.data() + t * a.pairs * 16;
  const uint8_t* wp[R];
  for (int r = 0; r < R; ++r) wp[r] = w.block_codes(b0 + r);
  __m512 out[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = _mm512_setzero_ps();
  for (int64_t g = 0; g < w.groups; ++g) {
    __m512 acc[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      if constexpr (Sym) acc[r] = _mm512_setzero_ps();
      else
        acc[r] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.block_zeros(b0 + r, g))))),
                               _mm512_set1_ps(-a.sum[t * w.groups + g]));
    }
    for (int64_t s = 0; s < steps; ++s) {
      // The step's 8 tables in registers, then block by block its lane words through them: each block's sum is one
      // chain in column order (the twin's), and the 8 blocks' chains overlap.
      const float* ts = tab + (g * steps + s) * kPairs * 16;
      __m512 table[kPairs];
#pragma GCC unroll 8
      for (int k = 0; k < kPairs; ++k) table[k] = _mm512_load_ps(ts + 16 * k);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        __builtin_prefetch(wp[r] + kBlockPrefetchBytes);  // past the end is harmless
        const __m512i code = _mm512_loadu_si512(wp[r]);
        wp[r] += kStep;
        __m512 sum = acc[r];
#pragma GCC unroll 8
        for (int k = 0; k < kPairs; ++k) sum = _mm512_add_ps(sum, _mm512_permutexvar_ps(_mm512_srli_epi32(code, 4 * k), table[k]));
        acc[r] = sum;
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
      out[r] = _mm512_fmadd_ps(acc[r], _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.block_scales(b0 + r, g)))), out[r]);
  }
  for (int r = 0; r < R; ++r) {
    const int valid = static_cast<int>(std::min<int64_t>(16, w.rows - 16 * (b0 + r)));
    _mm512_mask_storeu_ps(y + t * w.rows + 16 * (b0 + r), static_cast<__mmask16>((1u << valid) - 1u), out[r]);
  }
}

// Work items of 8 blocks (128 rows), split over the threads; the item's tokens inside, so its codes (128 KB at
// 4096 columns) stay in L2 while the tokens pass over them.
template <bool Sym>
void lut_isa(const BlockedCodes& w, const LutActs& a, float* y, int threads) {
  constexpr int64_t kItem = 8;
  const int64_t items = (w.blocks + kItem - 1) / kItem;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t it = 0; it < items; ++it) {
    const int64_t b0 = it * kItem, b1 = std::min(w.blocks, b0 + kItem);
    for (int64_t t = 0; t < a.n; ++t) {
      if (b1 - b0 == kItem) tile<kItem, Sym>(w, b0, a, t, y);
      else
        for (int64_t b = b0; b < b1; ++b) tile<1, Sym>(w, b, a, t, y);
    }
  }
}
#endif

// y = W x for n tokens by table lookup (use_isa: the AVX-512 tile where built, else the twin).
void gemm_lut(const BlockedCodes& w, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  const int nt = std::max(1, threads);
  const LutActs& a = make_tables(w, x, n);
#if defined(__AVX512F__)
  if (use_isa) return w.scheme.symmetric ? lut_isa<true>(w, a, y, nt) : lut_isa<false>(w, a, y, nt);
#endif
  (void)use_isa;
  lut_twin(w, a, y, nt);
}

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
  return lut == twin && e_lut <= 1e-4 * top && e_dots <= 1e-4 * top;
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

// The K families with dynamic activations (`+a8`, `+a16`): each token quantized as every dynamic path does
// (quantize_activations: one fp32 scale s per token, int8 codes a), then per super-block and sub-block b
//   sum_j w_j x_j ~ s (D_b sum_j q_j a_j - C_b sum_j a_j),   C_b = D_b zero + M_b,
// the integer sums exact, as llama.cpp's q*_K x q8_K dots compute them (ggml quantizes activations per 256
// weights, we per token as our int8 / int4 `+a8` does). The sums of a over every sub-block are the same for
// every row: taken once per call. On VNNI and on AVX2, `+a8` runs a fused block per family (isa_x86_kdot.h's
// Q2KVnni .. Q6KVnni, isa_x86_kfused_avx2.h's avx2::Q2K .., run_fused): the codes split from the block's bytes in
// registers and the steps decoded by vector operations, where the decoder path stored 256 codes and decoded the
// scales one by one per block and row (VNNI at 4096 x 4096, one token, one thread: 0.58-0.92 ms against that path's
// 1.44-2.2 ms; 768 x 256: 2.4-3.1x; AVX2: bench/HISTORY.md, 2026-12-02). Elsewhere, per block and row: the family's
// decoder (kquant_decode.h), then the portable block dot below; `+a16` (16-bit codes) runs the portable loops on
// every ISA (no ISA piece: its products do not fit vpmaddubsw). From kEigenMinTokens tokens (use_isa), except `+a8`
// on VNNI: the weight-only path's batch kernel (kquant_ftile.h's tile on AVX-512, else dequantized panels) on the quantized activations s a
// (quantized_panels). `+a8` on VNNI from kTileMinTokens tokens:
// the tile of isa_x86_kdot.h (KTile, run_tiled), 16 rows in the lanes, where the per-row fused blocks pay a
// conversion and a scaling per four-byte lane, token and block (at 64 tokens they were 0.50x-0.80x of ggml's
// repacked q2_K / q4_K kernels; the tile 2.0x-2.6x, bench/HISTORY.md 2026-11-30). The tile's error: two roundings
// per sub-block along the row (cols / 8 at most) and the token scale, inside the bound below.
// Twin: gemm_dynamic_ref (kernels/ref_dynamic.cpp): exact integer sub-block sums in int64, scaled in double.
// Error against it, relative to s sum_j (|D_b| (q_j + zero) + |M_b|) |a_j|: the block dot's exact lane sums
// each meet their D_b scaling and the chain over the row's blocks, the C_b terms and their sums, the final
// sums and the token scale (at most cols / 4 + cols / 16 + 16 roundings); the batch path a float dot of cols
// terms on s a (cols + 2). tests/test_kernels.cpp holds both with gamma(cols + cols / 16 + 16).
#include <algorithm>
#include <type_traits>
#include <vector>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/kernels/isa_x86_kdot.h"
#include "miniquant/kernels/kquant_fused.h"  // FusedOf
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/registry.h"
#include "miniquant/kernels/kquant_decode.h"
#include "miniquant/kernels/word_kernel.h"  // effective_threads
#include "miniquant/kquant.h"

namespace mq {
namespace kdetail {
namespace {

// The block dot's scalar twin, for int8 and int16 activation codes: 16 float lanes, lane l summing the
// scaled four-byte lanes l of the block's four 64-byte steps.
template <class A>
struct KDotPortable {
  static constexpr const char* kName = "portable";
  struct Acc {
    float v[16];
  };
  static Acc zero() { return Acc{}; }
  template <int Sub>
  static void block(Acc& acc, const uint8_t* q, const A* a, const float* D) {
    for (int s = 0; s < 4; ++s)
      for (int l = 0; l < 16; ++l) {
        const int i0 = 64 * s + 4 * l;
        int32_t d = 0;  // |d| <= 4 * 63 * 32639 for int16 codes
        for (int i = i0; i < i0 + 4; ++i) d += int32_t{q[i]} * int32_t{a[i]};
        acc.v[l] += D[i0 / Sub] * static_cast<float>(d);
      }
  }
  static float sum(const Acc& acc) {
    float s = 0.0f;
    for (float v : acc.v) s += v;
    return s;
  }
};

// One token's codes and scale: the int8 or the 16-bit quantizer (kernels.h), by the code type.
inline float quantize_token(const float* x, int64_t cols, int8_t* a) { return quantize_activations(x, cols, a); }
inline float quantize_token(const float* x, int64_t cols, int16_t* a) { return quantize_activations16(x, cols, a); }

// Tokens per pass of the tile path (KTile::kT where it is compiled) and the batch it starts at. A pass costs about
// the same for 2 as for 8 tokens (the block's decode is most of it), so the fused rows stay below: 4096 x 4096, one
// thread, q2_k / q4_k / q6_k, fused against tile (us): at 4 tokens 648 / 698 / 727 against 854 / 870 / 1112, at 8
// 1161 / 1201 / 1913 against 885 / 884 / 1097 (bench/HISTORY.md, 2026-11-30).
#if MQ_KDOT_FUSED
inline constexpr int64_t kTileTokens = KTile<Q4KVnni>::kT;
#else
inline constexpr int64_t kTileTokens = 1;
#endif
inline constexpr int64_t kTileMinTokens = 8;

using KDotFast8 = std::conditional_t<KDotVnni::kAvailable, KDotVnni,
                                     std::conditional_t<KDotAvx2::kAvailable, KDotAvx2, KDotPortable<int8_t>>>;

// a: (n, cols) activation codes;  s: (n) token scales;  asum: (n, cols / Sub) sums of a per sub-block;
// y: (n, rows).
template <class Isa, class Dec, class A>
void run(const QTensor& w, const A* a, const float* s, const float* asum, int64_t n, float* y, int nt) {
  constexpr int Sub = Dec::kSub, Nsub = kSuperBlock / Sub;
  const KFamily& f = kfamily_of(w.scheme);
  const int64_t rows = w.rows, cols = w.cols, nb = cols / kSuperBlock;
  const int64_t row_bytes = w.row_bytes();  // a format-table look-up: once per call, not per row
#pragma omp parallel num_threads(nt)
  {
    std::vector<typename Isa::Acc> acc(static_cast<size_t>(n));  // (n) the row's lane sums per token
    std::vector<float> off(static_cast<size_t>(n));             // (n) the row's sums of C_b asum_b
    alignas(64) uint8_t codes[kSuperBlock];
    KGrid g;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      std::fill(acc.begin(), acc.end(), Isa::zero());
      std::fill(off.begin(), off.end(), 0.0f);
      const uint8_t* row = w.codes.data() + r * row_bytes;
      for (int64_t b = 0; b < nb; ++b) {
        Dec::decode(row + b * f.block_bytes, g, codes);
        float C[Nsub];
        for (int j = 0; j < Nsub; ++j) C[j] = g.D[j] * static_cast<float>(Dec::kZero) + g.M[j];
        for (int64_t t = 0; t < n; ++t) {
          Isa::template block<Sub>(acc[static_cast<size_t>(t)], codes, a + t * cols + b * kSuperBlock, g.D);
          const float* as = asum + t * (cols / Sub) + b * Nsub;
          float o = 0.0f;
          for (int j = 0; j < Nsub; ++j) o += C[j] * as[j];
          off[static_cast<size_t>(t)] += o;
        }
      }
      for (int64_t t = 0; t < n; ++t) y[t * rows + r] = s[t] * (Isa::sum(acc[static_cast<size_t>(t)]) - off[static_cast<size_t>(t)]);
    }
  }
}

#if MQ_KFUSED
// A fused block (isa_x86_kdot.h's Q2KVnni .. Q6KVnni, or isa_x86_kfused_avx2.h's avx2::Q2K ..) in place of the
// decoder and the block dot, rows
// [r0, r1) inside the caller's parallel region; the same arguments as run. kN > 0: the token count as a template
// argument, so that the row's sums stay in registers (with a run-time count they live in memory and every block's
// add goes through a store and a reload on the row's loop-carried path: kquant.cpp's fused_float_rows measured
// it); kN = 0: any count, sums in a vector.
template <class Fused, int kN, bool kRaw = false>
void fused_rows_n(const QTensor& w, const int8_t* a, const float* s, const float* asum, int64_t n, float* y, int64_t r0,
                  int64_t r1) {
  const bool prefetch = prefetch_rows(static_cast<int64_t>(w.codes.size()), 0);  // kquant_fused.h
  const KFamily& f = kfamily_of(w.scheme);
  const int64_t rows = w.rows, cols = w.cols, nb = cols / kSuperBlock, per_row = nb * Fused::kNsub;
  const int64_t row_bytes = w.row_bytes();  // a format-table look-up: once per call, not per row
  using Acc = typename Fused::Acc;
  std::vector<Acc> acc_buf(kN > 0 ? 0 : static_cast<size_t>(n));
  typename Fused::Block blk;
#pragma omp for schedule(static)
  for (int64_t r = r0; r < r1; ++r) {
    // kN = 0: unused, the sums live in acc_buf. One body for both counts on purpose: an if-constexpr split through a
    // shared lambda measured 1.31x slower at q6_k+a8, 4 tokens (q2_k 1.02x-1.05x, q4_k level; 2026-12-01, 4096x4096 hot).
    [[maybe_unused]] Acc fixed[kN > 0 ? kN : 1];
    Acc* acc = kN > 0 ? fixed : acc_buf.data();  // (n) the row's sums per token
    const int64_t nn = kN > 0 ? kN : n;
    for (int64_t t = 0; t < nn; ++t) acc[t] = Fused::zero();
    const uint8_t* row = w.codes.data() + r * row_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      if (prefetch) prefetch_block_ahead(row + b * f.block_bytes, f.block_bytes);
      if constexpr (kRaw) {
        Fused::load_raw(row + b * f.block_bytes, blk);
      } else {
        Fused::load(row + b * f.block_bytes, blk);
      }
      for (int64_t t = 0; t < nn; ++t)
        Fused::token(blk, a + t * cols + b * kSuperBlock, asum + t * per_row + b * Fused::kNsub, acc[t]);
    }
    for (int64_t t = 0; t < nn; ++t) y[t * rows + r] = s[t] * Fused::sum(acc[t]);
  }
}
template <class Fused, bool kRaw = false>
void fused_rows(const QTensor& w, const int8_t* a, const float* s, const float* asum, int64_t n, float* y, int64_t r0,
                int64_t r1) {
  const bool fixed = kdetail::with_token_count<4>(
      n, [&](auto k) { fused_rows_n<Fused, decltype(k)::value, kRaw>(w, a, s, asum, n, y, r0, r1); });
  if (!fixed) fused_rows_n<Fused, 0, kRaw>(w, a, s, asum, n, y, r0, r1);
}

// Every row on the fused blocks; a block with a shuffle-free load (kRawLoad) gets the tokens' codes in its order,
// permuted once per call (the tile's remainder rows, run_tiled, keep the plain load and order).
template <class Fused>
void run_fused(const QTensor& w, const int8_t* a, const float* s, const float* asum, int64_t n, float* y, int nt) {
  if constexpr (kRawLoad<Fused>) {
    thread_local std::vector<int8_t> raw;  // (n, cols) the codes in load_raw's order
    raw.resize(static_cast<size_t>(n * w.cols));
    for (int64_t i = 0; i < n * w.cols; i += kSuperBlock) Fused::raw_order(a + i, raw.data() + i);
    const int8_t* ar = raw.data();
#pragma omp parallel num_threads(nt)
    fused_rows<Fused, true>(w, ar, s, asum, n, y, 0, w.rows);
  } else {
#pragma omp parallel num_threads(nt)
    fused_rows<Fused>(w, a, s, asum, n, y, 0, w.rows);
  }
}
#endif

#if MQ_KDOT_FUSED

// From kTileMinTokens tokens: isa_x86_kdot.h's KTile on every whole block of 16 rows (each thread decodes its block's
// super-blocks once into lanes, then runs every token through them, KTile::kT at a time), the fused blocks on the
// rows after the last whole block. a and asum hold n rounded up to KTile::kT tokens (zero past n): a pass's extra
// tokens are computed and not stored. Same arguments as run.
template <class Fused>
void run_tiled(const QTensor& w, const int8_t* a, const float* s, const float* asum, int64_t n, float* y, int nt) {
  using Tile = KTile<Fused>;
  const KFamily& f = kfamily_of(w.scheme);
  const int64_t rows = w.rows, cols = w.cols, nb = cols / kSuperBlock, per_row = nb * Fused::kNsub, blocks = rows / 16;
  const int64_t row_bytes = w.row_bytes();
#pragma omp parallel num_threads(nt)
  {
    struct alignas(64) Lanes { int32_t v[16]; };                // one vector's worth
    std::vector<Lanes> code_buf(static_cast<size_t>(nb * 64));  // (cols / 4, 16) the block's codes, four per lane
    std::vector<Lanes> step_buf(static_cast<size_t>(2 * per_row));  // (2, cols / sub, 16) D_b, then C_b
    __m512i* codes = reinterpret_cast<__m512i*>(code_buf.data());
    __m512* D = reinterpret_cast<__m512*>(step_buf.data());
    __m512* C = D + per_row;
#pragma omp for schedule(static) nowait
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const uint8_t* row0 = w.codes.data() + blk * 16 * row_bytes;
      for (int64_t b = 0; b < nb; ++b)
        Tile::decode(row0 + b * f.block_bytes, row_bytes, codes + 64 * b, D + b * Fused::kNsub, C + b * Fused::kNsub);
      for (int64_t t0 = 0; t0 < n; t0 += Tile::kT) {
        __m512 out[Tile::kT];
        Tile::run(codes, D, C, per_row, a + t0 * cols, cols, asum + t0 * per_row, per_row, out);
        for (int64_t t = 0; t < std::min<int64_t>(Tile::kT, n - t0); ++t)
          _mm512_storeu_ps(y + (t0 + t) * rows + blk * 16, _mm512_mul_ps(_mm512_set1_ps(s[t0 + t]), out[t]));
      }
    }
    fused_rows<Fused>(w, a, s, asum, n, y, blocks * 16, rows);
  }
}
#endif

// Quantizes every token, sums its codes per sub-block, and runs the block dot Isa over the family's decoder (or,
// on VNNI, the family's fused block).
template <class A, class Isa, class Dec>
void quantize_and_run(const QTensor& w, const KFamily& f, const float* x, int64_t n, float* y, int nt) {
  const int64_t cols = w.cols, per_row = cols / f.sub;
  // The calling thread's buffers, kept between calls (assign keeps the capacity): a decode call on MiniGPT's
  // 256-wide Linears is short enough for three allocations to show (measured in vs-llama's MiniGPT rows).
  thread_local std::vector<A> a;
  thread_local std::vector<float> s, asum;
  // The tile path reads whole passes of kTileTokens: its buffers hold n rounded up, zero past n.
  const int64_t n_pad = (n + kTileTokens - 1) / kTileTokens * kTileTokens;
  a.assign(static_cast<size_t>(n_pad * cols), A{0});        // (n_pad, cols)
  s.assign(static_cast<size_t>(n), 0.0f);                   // (n)
  asum.assign(static_cast<size_t>(n_pad * per_row), 0.0f);  // (n_pad, cols / sub): exact, |sum| <= 32 * 32639 < 2^24
  for (int64_t t = 0; t < n; ++t) {
    A* at = a.data() + t * cols;
    s[static_cast<size_t>(t)] = quantize_token(x + t * cols, cols, at);
    for (int64_t j = 0; j < per_row; ++j) {
      int32_t v = 0;
      for (int i = 0; i < f.sub; ++i) v += at[j * f.sub + i];
      asum[static_cast<size_t>(t * per_row + j)] = static_cast<float>(v);
    }
  }
  // The choice hangs on Isa, a parameter of this template, so the branch not taken is never instantiated (clang
  // checks a call inside a generic lambda whose arguments no longer depend on its parameter: the int16 codes would
  // reach the fused blocks' int8 signature there).
  if constexpr (std::is_same_v<Isa, KDotVnni>) {
#if MQ_KDOT_FUSED
    using Fused = typename FusedOf<Dec>::type;
    if (n >= kTileMinTokens && w.rows >= 16) return run_tiled<Fused>(w, a.data(), s.data(), asum.data(), n, y, nt);
    run_fused<Fused>(w, a.data(), s.data(), asum.data(), n, y, nt);
#else
    static_assert(sizeof(Isa) == 0, "KDotVnni is chosen only where the fused blocks are compiled");
#endif
  } else if constexpr (std::is_same_v<Isa, KDotAvx2>) {
#if MQ_KFUSED_AVX2
    run_fused<typename FusedAvx2Of<Dec>::type>(w, a.data(), s.data(), asum.data(), n, y, nt);
#else
    static_assert(sizeof(Isa) == 0, "KDotAvx2 is chosen only where the AVX2 fused blocks are compiled");
#endif
  } else {
    run<Isa, Dec>(w, a.data(), s.data(), asum.data(), n, y, nt);
  }
}

// From kEigenMinTokens tokens, where no fused block runs (`+a16`, and `+a8` without VNNI): the quantized activations
// s a as floats (exact up to the one rounding of s a), through the weight-only path's batch kernel (the register
// tile on AVX-512, dequantized panels and Eigen's GEMM elsewhere), which decodes each weight once per call where the
// decoder's block dot decodes it once per token pass.
template <class A, class Dec>
void quantized_panels(const QTensor& w, const float* x, int64_t n, float* y, int nt) {
  const int64_t cols = w.cols;
  thread_local std::vector<A> a;       // (cols) one token's codes
  thread_local std::vector<float> xq;  // (n, cols) s a
  a.assign(static_cast<size_t>(cols), A{0});
  xq.assign(static_cast<size_t>(n * cols), 0.0f);
  for (int64_t t = 0; t < n; ++t) {
    const float s = quantize_token(x + t * cols, cols, a.data());
    for (int64_t i = 0; i < cols; ++i) xq[static_cast<size_t>(t * cols + i)] = s * static_cast<float>(a[static_cast<size_t>(i)]);
  }
  gemm_kquant_batch<Dec>(w, xq.data(), n, y, nt);
}

}  // namespace
}  // namespace kdetail

const char* kquant_dynamic_kernel_name() { return kdetail::KDotFast8::kName; }

namespace kdetail {
void gemm_kquant_fused_avx2_a8(const QTensor& w, const float* x, int64_t n, float* y, int threads) {
  if (empty_product(w.rows, w.cols, n, y, "gemm_kquant_fused_avx2_a8")) return;
#if MQ_KFUSED_AVX2
  const KFamily& f = kfamily_of(w.scheme);
  const int nt = effective_threads(threads, w.rows * w.cols * n);
  const bool ran = kdecode::with_decoder(f, [&](auto dec) { quantize_and_run<int8_t, KDotAvx2, decltype(dec)>(w, f, x, n, y, nt); });
  if (!ran) throw Error(fmt::format("gemm_kquant_fused_avx2_a8: no decoder for {}", f.name));
#else
  throw Error("gemm_kquant_fused_avx2_a8: the AVX2 fused blocks are not compiled in this build");
#endif
}
}  // namespace kdetail

namespace {
// The family's +a8 / +a16 (Dec, its row's template argument): +a8 on VNNI the fused blocks at every batch; otherwise
// from 16 tokens (Isa) the quantized activations through the weight-only batch kernel, below that +a8 on the AVX2 fused
// blocks (else the portable block dot), +a16 on the portable one.
template <class Dec, bool Isa>
void kquant_dynamic_rows(const QTensor& w, const float* x, int64_t n, float* y, int threads, ActMode act, bool) {
  using namespace kdetail;
  if (empty_product(w.rows, w.cols, n, y, "kquant_dynamic_rows")) return;
  const KFamily& f = kfamily_of(w.scheme);
  const int nt = effective_threads(threads, w.rows * w.cols * n);
  // `+a8` on VNNI stays on its fused blocks (from kTileMinTokens the tile) at every batch: at 16 and 64 tokens the
  // fused rows alone took 0.32-0.86x the panels' time (4096 x 4096, 1 and 2 threads, every family; bench/HISTORY.md,
  // 2026-11-29).
  if (Isa && n >= kEigenMinTokens && !(MQ_KDOT_FUSED && act == ActMode::dynamic_int8)) {
    if (act == ActMode::dynamic_int16) return quantized_panels<int16_t, Dec>(w, x, n, y, nt);
    return quantized_panels<int8_t, Dec>(w, x, n, y, nt);
  }
  if (act == ActMode::dynamic_int16) return quantize_and_run<int16_t, KDotPortable<int16_t>, Dec>(w, f, x, n, y, nt);
  if (Isa) return quantize_and_run<int8_t, KDotFast8, Dec>(w, f, x, n, y, nt);
  quantize_and_run<int8_t, KDotPortable<int8_t>, Dec>(w, f, x, n, y, nt);
}
}  // namespace

std::vector<KernelRow> kernel_rows_kquant_dynamic() {
  const ActSet dyn = act_bit(ActMode::dynamic_int8) | act_bit(ActMode::dynamic_int16);
  const auto isa = [&](std::string_view fam, RowKernelFn fn) {
    return KernelRow{families_of({fam}), dyn, Layout::row_major, Acts::any, true, nullptr, fn, nullptr,
                     "AVX-512 VNNI / AVX2 (`kquant_dynamic_kernel_name()`)",
                     "`kquant_dynamic_rows<Dec>`: the fused blocks (`kquant_dynamic.cpp`; `isa_x86_kdot.h`, `isa_x86_kfused_avx2.h`); `+a8` on VNNI "
                     "from 8 tokens the 16-row tile (`KTile`), otherwise from 16 tokens the weight-only batch kernel on s a",
                     "`gemm_dynamic_ref`", "`test_kernels`"};
  };
  const auto portable = [&](std::string_view fam, RowKernelFn fn) {
    return KernelRow{families_of({fam}), dyn, Layout::row_major, Acts::any, false, nullptr, fn, nullptr, "any",
                     "`kquant_dynamic_rows<Dec>` portable: `KDotPortable`", "`gemm_dynamic_ref`", "`test_kernels`"};
  };
  using namespace kdecode;
  return {isa("q2_k", kquant_dynamic_rows<Q2K, true>),       isa("q3_k", kquant_dynamic_rows<Q3K, true>),
          isa("q4_k", kquant_dynamic_rows<Q4K, true>),       isa("q5_k", kquant_dynamic_rows<Q5K, true>),
          isa("q6_k", kquant_dynamic_rows<Q6K, true>),       portable("q2_k", kquant_dynamic_rows<Q2K, false>),
          portable("q3_k", kquant_dynamic_rows<Q3K, false>), portable("q4_k", kquant_dynamic_rows<Q4K, false>),
          portable("q5_k", kquant_dynamic_rows<Q5K, false>), portable("q6_k", kquant_dynamic_rows<Q6K, false>)};
}

}  // namespace mq

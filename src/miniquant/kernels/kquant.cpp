// The weight-only kernel of the K-quant families (q2_k .. q6_k), one for all five on xsimd (AVX-512, AVX2, NEON).
// A block's weight j of sub-block b is w_j = D_b (q_j - zero) - M_b, so a sub-block's share of a dot is
//   sum_j w_j x_j = D_b sum_j q_j x_j - C_b sum_j x_j,   C_b = D_b zero + M_b,
// and the sums of x over every sub-block are the same for every row: they are taken once per call (xsum).
// Per weight only its code (from the family's decoder, kquant_decode.h, converted to float once per block and
// reused by every token, or widened in place for a single token on AVX-512) and one multiply-add remain; a
// sub-block's lane sums are scaled by D_b once. Four rows per pass: four independent chains, one activation load
// for four rows. A q4_k decoder writing floats straight from the nibbles was measured 4-5% slower than unpack +
// conversion (gcc's 256-bit code). On AVX-512 from 8 tokens (ftile::kMinTokens) a register tile over each block's
// dequantized weights (kquant_ftile.h); elsewhere from kEigenMinTokens tokens dequantized panels and Eigen's GEMM
// (run_kquant_panels). On AVX-512 with VNNI, one to 7 tokens run on the `+a8` kernel's fused blocks instead
// (run_fused_float, kquant_fused.h: the codes split in registers, one shift, table widening and FMA per 16
// weights), 1.5-3.4x faster than the decoder path at one token on 4096-wide rows (bench/HISTORY.md, 2026-11-29);
// without VNNI but with AVX2 (Zen 3, AVX-512F Xeons), one to 3 tokens on the AVX2 fused blocks
// (isa_x86_kfused_avx2.h, 1.45-2.99x the decoder path at one token: bench/HISTORY.md, 2026-12-02); from 4 tokens there,
// and on NEON and plain x86-64 at every count, the decoder path. The `+a8` / `+a16` modes are kquant_dynamic.cpp's.
// Twin: gemm_ref (kernels/ref.cpp), the dequantized weights times x one by one. Error against the exact product
// of the stored weights: each product meets at most cols / sub + sub / W + 8 roundings (the sub-block's lane
// sum, its D_b scaling and the chain across sub-blocks, the C_b term and its sum of x, the final lane sum),
// relative to sum_j (|D_b| (q_j + zero) + |M_b|) |x_j| (kmagnitude_at), which tests/test_kernels.cpp checks with
// its larger gamma(cols + 17).
#include <algorithm>
#include <vector>

#include <fmt/core.h>
#include <xsimd/xsimd.hpp>

#include "miniquant/error.h"
#include "miniquant/kernels/isa_x86.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/registry.h"
#include "miniquant/kernels/kquant_decode.h"
#include "miniquant/kernels/kquant_fused.h"
#include "miniquant/kernels/kquant_ftile.h"
#include "miniquant/kernels/word_kernel.h"  // effective_threads
#include "miniquant/kquant.h"

namespace mq {
namespace {

// sum of x over every sub-block of every token.  x: (n, cols);  out: (n, cols / sub).
void subblock_sums(const float* x, int64_t n, int64_t cols, int sub, std::vector<float>& out) {
  const int64_t per_row = cols / sub;
  out.assign(static_cast<size_t>(n * per_row), 0.0f);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t s = 0; s < per_row; ++s) {
      const float* xs = x + t * cols + s * sub;
      float a = 0.0f;
      for (int i = 0; i < sub; ++i) a += xs[i];
      out[static_cast<size_t>(t * per_row + s)] = a;
    }
}

// decode(block, grid, codes): a family's decoder (kquant_decode.h), or the generic unpack + kgrid (the twin).
template <class Decode>
void run_kquant(const QTensor& w, const KFamily& f, Decode decode, const float* x, int64_t n, float* y, int threads,
                bool use_isa) {
  using B = xsimd::batch<float>;  // W lanes: 16 on AVX-512, 8 on AVX2, 4 on NEON; every sub (16, 32) is a multiple
  constexpr int W = static_cast<int>(B::size);
  // Rows per pass: R independent multiply-add chains hide the FMA latency, and each activation load serves R
  // rows. A last pass with fewer rows repeats its first row in the spare slots and stores only the real ones.
  constexpr int R = 4;
  const int64_t cols = w.cols, rows = w.rows, nb = cols / kSuperBlock, per_row = cols / f.sub;
  const int nsub = f.nsub(), sub = f.sub;
  const int64_t row_bytes = w.row_bytes();  // a format-table look-up: once per call, not per pass
  std::vector<float> xsum;  // (n, cols / sub)
  subblock_sums(x, n, cols, sub, xsum);
  const int64_t passes = (rows + R - 1) / R;
  // One token: the codes widened to float where they are used (AVX-512, isa_x86.h), no float copy (8% faster
  // than the copy at 1024 x 1024, paired); several tokens: one float copy per block, which every token reuses.
  // use_isa = false: always the copy (the portable path the tests compare).
  const bool direct = kdetail::CodesF32::kAvailable && n == 1 && use_isa;
  const int nt = kdetail::effective_threads(threads, rows * cols * n);
#pragma omp parallel num_threads(nt)
  {
    std::vector<B> acc(static_cast<size_t>(n * R));     // (n, R) the pass's D-scaled lane sums
    std::vector<float> off(static_cast<size_t>(n * R));  // (n, R) the pass's sums of C_b xsum_b
    alignas(64) uint8_t codes[R][kSuperBlock];           // (R, kSuperBlock) the pass's blocks' codes
    alignas(64) float qf[R][kSuperBlock];                // (R, kSuperBlock) the same as floats (the path with a copy)
    KGrid g[R];
#pragma omp for schedule(static)
    for (int64_t pass = 0; pass < passes; ++pass) {
      const int64_t r0 = pass * R;
      const int nr = static_cast<int>(std::min<int64_t>(R, rows - r0));
      std::fill(acc.begin(), acc.end(), B(0.0f));
      std::fill(off.begin(), off.end(), 0.0f);
      const uint8_t* row[R];
      for (int k = 0; k < R; ++k) row[k] = w.codes.data() + (r0 + (k < nr ? k : 0)) * row_bytes;
      for (int64_t b = 0; b < nb; ++b) {
        for (int k = 0; k < R; ++k) {
          decode(row[k] + b * f.block_bytes, g[k], codes[k]);
          if (!direct)
            for (int i = 0; i < kSuperBlock; ++i) qf[k][i] = static_cast<float>(codes[k][i]);
        }
        float C[R][kMaxSubBlocks];  // (R, nsub) D zero + M of every sub-block of the pass's blocks
        for (int k = 0; k < R; ++k)
          for (int j = 0; j < nsub; ++j) C[k][j] = g[k].D[j] * static_cast<float>(f.zero) + g[k].M[j];
        // Token-major: a token's R lane sums and offsets stay in registers over the block's sub-blocks (the
        // same order of additions as sub-block-major, so the same results).
        for (int64_t t = 0; t < n; ++t) {
          B a[R];
          float o[R];
          for (int k = 0; k < R; ++k) a[k] = acc[static_cast<size_t>(t * R + k)], o[k] = off[static_cast<size_t>(t * R + k)];
          for (int j = 0; j < nsub; ++j) {
            const int64_t s = b * nsub + j;  // the sub-block's index in the row
            const float* xs = x + t * cols + s * sub;
            // The codes of lanes i .. i + W - 1 of row k's sub-block j, as floats.
            auto qv = [&](int k, int i) {
              if constexpr (kdetail::CodesF32::kAvailable) {
                if (direct) return kdetail::CodesF32::load(codes[k] + j * sub + i);
              }
              return B::load_aligned(qf[k] + j * sub + i);
            };
            B part[R];
            const B x0 = B::load_unaligned(xs);
            for (int k = 0; k < R; ++k) part[k] = qv(k, 0) * x0;
            for (int i = W; i < sub; i += W) {
              const B xv = B::load_unaligned(xs + i);
              for (int k = 0; k < R; ++k) part[k] = xsimd::fma(qv(k, i), xv, part[k]);
            }
            const float xsb = xsum[static_cast<size_t>(t * per_row + s)];
            for (int k = 0; k < R; ++k) {
              a[k] = xsimd::fma(B(g[k].D[j]), part[k], a[k]);
              o[k] += C[k][j] * xsb;
            }
          }
          for (int k = 0; k < R; ++k) acc[static_cast<size_t>(t * R + k)] = a[k], off[static_cast<size_t>(t * R + k)] = o[k];
        }
      }
      for (int64_t t = 0; t < n; ++t)
        for (int k = 0; k < nr; ++k)
          y[t * rows + r0 + k] = xsimd::hadd(acc[static_cast<size_t>(t * R + k)]) - off[static_cast<size_t>(t * R + k)];
    }
  }
}

// From kEigenMinTokens tokens on where the register tile is not compiled (AVX2, NEON): each thread dequantizes a
// panel of its rows to fp32 (the values gemm_ref multiplies, kvalue's float operations) and runs Eigen's packed
// GEMM on it, so a weight is decoded once per call, not once per four tokens. Panels of about 4 MB stay in the
// last-level cache between the decode and the GEMM's packing. On AVX-512 the tile replaced it: 1.5-1.6x faster at
// 64 tokens, 4096x4096, one thread (bench/HISTORY.md, 2026-12-01).
template <class Dec>
void run_kquant_panels(const QTensor& w, const KFamily& f, const float* x, int64_t n, float* y, int threads) {
  const int64_t rows = w.rows, cols = w.cols, nb = cols / kSuperBlock;
  const int64_t panel = std::clamp<int64_t>((int64_t{1} << 20) / cols / 16 * 16, 16, 256);
  const int64_t panels = (rows + panel - 1) / panel;
  const int nt = kdetail::effective_threads(threads, rows * cols * n);
#pragma omp parallel num_threads(nt)
  {
    std::vector<float> wf(static_cast<size_t>(std::min(panel, rows) * cols));  // (panel, cols) dequantized rows
    alignas(64) uint8_t codes[kSuperBlock];
    KGrid g;
#pragma omp for schedule(static)
    for (int64_t p = 0; p < panels; ++p) {
      const int64_t r0 = p * panel, nr = std::min(panel, rows - r0);
      for (int64_t r = 0; r < nr; ++r) {
        const uint8_t* row = w.row_codes(r0 + r);
        for (int64_t b = 0; b < nb; ++b) {
          Dec::decode(row + b * f.block_bytes, g, codes);
          kdecode::dequantize<Dec>(g, codes, wf.data() + r * cols + b * kSuperBlock);
        }
      }
      kdetail::gemm_fp32_serial(wf.data(), nr, cols, x, n, y + r0, rows);
    }
  }
}

}  // namespace

namespace kdetail {
// The batch path: the register tile on AVX-512 (kquant_ftile.h) from its kMinTokens, the panels elsewhere from
// kEigenMinTokens. One choice of ISA for both the path and the batch it takes over from.
#if MQ_KQUANT_FTILE
constexpr int64_t kBatchMinTokens = ftile::kMinTokens;
#else
constexpr int64_t kBatchMinTokens = kEigenMinTokens;
#endif
template <class Dec>
void gemm_kquant_batch(const QTensor& w, const float* x, int64_t n, float* y, int threads) {
#if MQ_KQUANT_FTILE
  ftile::run<Dec>(w, kfamily_of(w.scheme), x, n, y, threads);
#else
  run_kquant_panels<Dec>(w, kfamily_of(w.scheme), x, n, y, threads);
#endif
}
// The five families' batch path, which the dynamic modes reuse from kquant_dynamic.cpp.
template void gemm_kquant_batch<kdecode::Q2K>(const QTensor&, const float*, int64_t, float*, int);
template void gemm_kquant_batch<kdecode::Q3K>(const QTensor&, const float*, int64_t, float*, int);
template void gemm_kquant_batch<kdecode::Q4K>(const QTensor&, const float*, int64_t, float*, int);
template void gemm_kquant_batch<kdecode::Q5K>(const QTensor&, const float*, int64_t, float*, int);
template void gemm_kquant_batch<kdecode::Q6K>(const QTensor&, const float*, int64_t, float*, int);
}  // namespace kdetail

namespace {
#if MQ_KFUSED
// Software prefetch of the codes where kdetail::prefetch_rows says (kquant_fused.h: the distance, the rule and their
// measurements). Passes over column chunks (x in L1) and 4-row groups were tried against it and lost more from DRAM
// than they saved (bench/README.md).
// One to 7 tokens on AVX-512 with VNNI (the tile takes 8 and more): the family's fused block loaded once per block and
// row, then each token's float step (kquant_fused.h). The token count is a template argument (kN, one instantiation per
// count, chosen by with_token_count): with a run-time count the row's sums lived in a stack array and every block's add
// went through a store and a reload on the row's loop-carried path; in registers, one token 4096x4096 hot, 1 thread:
// q2_k and q4_k 1.13-1.17x faster, q6_k 1.06x, q3_k and q5_k level (bench/HISTORY.md, 2026-12-01). Two rows per pass
// and four-row groups for several tokens were measured too: faster in cache, slower (q3_k, q6_k down to 0.4x) from
// DRAM, as the earlier row-group experiments here were. On AVX2 the same rows run the AVX2 blocks (FusedOf). xp: (kN,
// cols) the tokens' activations in the blocks' field order; xsum: (kN, cols / sub) their sums per sub-block; y: (kN, rows).
// Fused: the family's block (FusedOf<Dec>, or FusedAvx2Of<Dec> for the test entry below); kCodes = 2^bits.
template <class Fused, int kCodes, int kN>
void fused_float_rows(const QTensor& w, const KFamily& f, const float* xp, const float* xsum, float* y, int nt, bool prefetch) {
  const int64_t rows = w.rows, cols = w.cols, nb = cols / kSuperBlock, per_row = nb * Fused::kNsub;
  const int64_t row_bytes = w.row_bytes();  // a format-table look-up: once per call, not per row
#pragma omp parallel num_threads(nt)
  {
    typename Fused::Block blk;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      typename Fused::Acc acc[kN];  // (kN) the row's sums per token
      for (int t = 0; t < kN; ++t) acc[t] = Fused::zero();
      const uint8_t* row = w.codes.data() + r * row_bytes;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* bp = row + b * f.block_bytes;
        if (prefetch) kdetail::prefetch_block_ahead(bp, f.block_bytes);
        if constexpr (kdetail::kRawLoad<Fused>) {
          Fused::load_raw(bp, blk);  // x comes in its order (run_fused_float)
        } else {
          Fused::load(bp, blk);
        }
        for (int t = 0; t < kN; ++t)
          kdetail::fused_float_token<Fused, kCodes>(blk, xp + t * cols + b * kSuperBlock, xsum + t * per_row + b * Fused::kNsub, acc[t]);
      }
      for (int t = 0; t < kN; ++t) y[t * rows + r] = Fused::sum(acc[t]);
    }
  }
}

// The token counts run_fused_float is instantiated for (1 .. 7: the AVX-512 tile takes 8 and more), and the ones the
// rows give it: every count below the batch path on VNNI; on AVX2 1 .. 3. There a field's widening costs a mask and
// a convert (q2_k, q3_k: a permute) per 8 weights and token (a permute per 16 on VNNI), so from 4 tokens the decoder
// path's float copy, made once per block and read by every token, costs as much or less. 4096x4096, one thread, hot, ggml's time over ours in
// the same run (two runs each of a -march=znver3 build on Zen 5), decoder path -> fused: at 3 tokens every family
// faster in both runs (q2_k 0.23, 0.25 -> 0.38, 0.39; q4_k 0.29, 0.27 -> 0.31, 0.31); at 4 and 8 q4_k slower in both
// (at 8: 0.30, 0.22 -> 0.21, 0.20), q2_k faster, the others inside the runs' spread (bench/HISTORY.md, 2026-12-02).
constexpr int kFusedFloatCounts = 7;
constexpr int64_t kFusedFloatMaxTokens = MQ_KDOT_FUSED ? kdetail::kBatchMinTokens - 1 : 3;
static_assert(kFusedFloatMaxTokens <= kFusedFloatCounts);

template <class Fused, int kCodes>
void run_fused_float(const QTensor& w, const KFamily& f, const float* x, int64_t n, float* y, int threads) {
  const int64_t cols = w.cols;
  // The calling thread's buffers, kept between calls; the workers see them through the pointers below (a
  // thread_local named inside the parallel region would be each worker's own, empty one).
  thread_local std::vector<float> xp_buf, xsum_buf, raw_buf;
  xp_buf.resize(static_cast<size_t>(n * cols));
  const float* xo = x;  // (n, cols) x in the order of the block's code vectors
  if constexpr (kdetail::kRawLoad<Fused>) {
    raw_buf.resize(static_cast<size_t>(n * cols));
    for (int64_t i = 0; i < n * cols; i += kSuperBlock) Fused::raw_order(x + i, raw_buf.data() + i);
    xo = raw_buf.data();
  }
  for (int64_t t = 0; t < n; ++t) kdetail::permute_lanes<Fused::kLanes>(xo + t * cols, cols, xp_buf.data() + t * cols);
  subblock_sums(x, n, cols, f.sub, xsum_buf);
  const float* xp = xp_buf.data();
  const float* xsum = xsum_buf.data();
  const int nt = kdetail::effective_threads(threads, w.rows * cols * n);
  const bool prefetch = kdetail::prefetch_rows(static_cast<int64_t>(w.codes.size()), n * cols * static_cast<int64_t>(sizeof(float)));
  const bool done = kdetail::with_token_count<kFusedFloatCounts>(
      n, [&](auto k) { fused_float_rows<Fused, kCodes, decltype(k)::value>(w, f, xp, xsum, y, nt, prefetch); });
  if (!done) throw Error(fmt::format("run_fused_float: {} tokens (1 .. {} expected)", n, kFusedFloatCounts));
}
#endif

// The family's decoder (Dec, its row's template argument: no switch on the width): the batch path from 8 tokens on
// AVX-512 (the register tile), from 16 elsewhere (panels and Eigen); below that the fused blocks against float
// activations where the CPU has them (AVX-512 VNNI; AVX2 with FMA and F16C up to 3 tokens), else the per-token kernel
// over blocks decoded in place.
template <class Dec>
void kquant_rows(const QTensor& w, const float* x, int64_t n, float* y, int threads, ActMode, bool) {
  if (empty_product(w.rows, w.cols, n, y, "kquant_rows")) return;
  const KFamily& f = kfamily_of(w.scheme);
  if (n >= kdetail::kBatchMinTokens) return kdetail::gemm_kquant_batch<Dec>(w, x, n, y, threads);
#if MQ_KFUSED
  if (n <= kFusedFloatMaxTokens) return run_fused_float<typename kdetail::FusedOf<Dec>::type, 1 << Dec::kBits>(w, f, x, n, y, threads);
#endif
  run_kquant(w, f, [](const uint8_t* blk, KGrid& g, uint8_t* codes) { Dec::decode(blk, g, codes); }, x, n, y, threads, true);
}
// The twin of the decoders: the family's generic unpack and kgrid, the per-token kernel at every batch size.
void kquant_portable_rows(const QTensor& w, const float* x, int64_t n, float* y, int threads, ActMode, bool) {
  if (empty_product(w.rows, w.cols, n, y, "kquant_portable_rows")) return;
  const KFamily& f = kfamily_of(w.scheme);
  const auto generic = [&f](const uint8_t* blk, KGrid& g, uint8_t* codes) {
    KParams p;
    f.unpack(blk, p, codes);
    g = kgrid(f, p);
  };
  run_kquant(w, f, generic, x, n, y, threads, false);
}
}  // namespace

namespace kdetail {
bool kquant_fused_avx2_built() { return MQ_KFUSED_AVX2; }
void gemm_kquant_fused_avx2_wo(const QTensor& w, const float* x, int64_t n, float* y, int threads) {
  if (empty_product(w.rows, w.cols, n, y, "gemm_kquant_fused_avx2_wo")) return;
#if MQ_KFUSED_AVX2
  const KFamily& f = kfamily_of(w.scheme);
  const bool ran = kdecode::with_decoder(f, [&](auto dec) {
    using Dec = decltype(dec);
    run_fused_float<typename FusedAvx2Of<Dec>::type, 1 << Dec::kBits>(w, f, x, n, y, threads);
  });
  if (!ran) throw Error(fmt::format("gemm_kquant_fused_avx2_wo: no decoder for {}", f.name));
#else
  throw Error("gemm_kquant_fused_avx2_wo: the AVX2 fused blocks are not compiled in this build");
#endif
}
}  // namespace kdetail

std::vector<KernelRow> kernel_rows_kquant() {
  const ActSet wo = act_bit(ActMode::weight_only);
  constexpr std::string_view kKernel =
      "`kquant_rows<Dec>`: below the batch kernels the fused blocks against float activations on AVX-512 VNNI or AVX2 "
      "(`kquant_fused.h`), elsewhere the family's decoder reads blocks in place; on AVX-512 from 8 tokens a 12-row x 32-token register tile over "
      "dequantized blocks (`kquant_ftile.h`), elsewhere from 16 tokens Eigen on dequantized panels (`kquant.cpp`)";
  const auto row = [&](std::string_view fam, RowKernelFn fn) {
    return KernelRow{families_of({fam}), wo, Layout::row_major, Acts::any, true, nullptr, fn, nullptr, "any (xsimd)", kKernel,
                     "`gemm_ref`", "`test_kernels`, `test_kquant`"};
  };
  using namespace kdecode;
  return {
      row("q2_k", kquant_rows<Q2K>), row("q3_k", kquant_rows<Q3K>), row("q4_k", kquant_rows<Q4K>), row("q5_k", kquant_rows<Q5K>),
      row("q6_k", kquant_rows<Q6K>),
      {families_of({"q2_k", "q3_k", "q4_k", "q5_k", "q6_k"}), wo, Layout::row_major, Acts::any, false, nullptr, kquant_portable_rows,
       nullptr, "any", "`kquant_portable_rows`: the generic unpack, per token at every batch", "`gemm_ref`",
       "`test_kernels`, `test_kquant`"},
  };
}

}  // namespace mq

// Weight-only kernel core shared by every family: a row is read as 32-bit words of F fields each,
// fields are decoded in registers (shift, mask, convert) and multiplied against an x that was
// permuted once per call, so no byte-to-float widening (slow in xsimd 8) and no dequantized copy.
//
// Lane layout: one block is L words (L = float lanes). Lane j of a block holds fields j*F .. j*F+F-1,
// so decoding field k of every lane gives elements {j*F + k}; x is permuted once per call into
// xp[b*EB + k*L + j] = x[b*EB + j*F + k] (EB = L*F elements per block) and read contiguously.
// Integer schemes: sum_i (u_i - z) x_i = sum_i u_i x_i - z * sum_i x_i, the second term from
// per-group sums of x computed once per call, so the inner loop never subtracts z.
// A block's L words are L consecutive 32-bit words of the row, except for a decoder that brings its
// own load (D::load, D::kBlockBytes): int3, whose lanes are 3-byte pieces of the bit stream.
//
// Part 4 of 4: run() (threads, row chunks, the choice of tile) and run_any() (the group layouts). The parts:
// word_decoders.h (decoders), word_plan.h (per-call and per-row preparation), word_tiles.h (the tiles).
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "miniquant/kernels/word_tiles.h"

namespace mq::kdetail {

// Runs the whole product y (n, rows) with decoder D. WT: a QTensor, or FloatRows for DecF32.
template <class D, int M, class WT = QTensor>
void run(const WT& w, const float* x, int64_t n, float* y, int threads) {
  // The plan and each thread's scratch below keep their buffers between calls (thread_local): allocating
  // and freeing them on every call was a measurable part of a small product such as MiniGPT's 256-wide
  // Linears (malloc / free took about half of the samples outside the tile, perf, 256x256 int4-g64). They hold the
  // largest call's sizes, a few MB at most for the bench's 64-token 4096x11008 products.
  thread_local Plan plan;
  make_plan<D>(plan, w, x, n);
  const Plan& p = plan;
  const int64_t rbytes = w.row_bytes();
  const auto row_at = [&](int64_t r) { return w.codes.data() + r * rbytes; };  // w.row_codes without its per-row size call
  const int nt = effective_threads(threads, w.rows * w.cols * n);
  // Row chunks of at most ~256 KB of codes stay in L2 while every token tile streams over them.
  const int64_t rc = std::clamp<int64_t>((256 << 10) / std::max<int64_t>(rbytes, 1), 1,
                                         std::max<int64_t>(1, (w.rows + nt - 1) / nt));
  const int64_t nchunks = (w.rows + rc - 1) / rc;
  const int zero_sym = 1 << (w.scheme.bits - 1);
  constexpr bool zero_term = D::kScaled && !signed_table<D>();  // signed tables leave no z * sum(x) term
#pragma omp parallel num_threads(nt)
  {
    // Per-thread scratch, each buffer on cache lines of its own: two threads writing to one line
    // (small buffers from one malloc arena) made decode speed vary 2x from run to run.
    constexpr int R = 4;  // decode: rows per tile
    // Several tokens: a sub-chunk of up to kSub rows has its scales and zero-point corrections computed
    // once, then every T-token tile of activations runs over all of its rows (row pairs) while the tile
    // stays in L1/L2.
    // The corrections of a sub-chunk take sub_rows * n floats: capped at 2^16 (256 KB), so a long batch
    // shrinks the sub-chunk instead of growing the scratch.
    constexpr int T = 4;
    constexpr int64_t kSub = 128;
    const int64_t sub_rows =
        n == 1 ? R : std::max<int64_t>(2, std::min({kSub, rc, (int64_t{1} << 16) / std::max<int64_t>(n, 1)}));
    const int64_t sfw = p.gpr + L;  // one row's scales, padded for lane_scales
    thread_local AlignedVector<float> sf, corr, sz, out;
    sf.assign(static_cast<size_t>(sub_rows * sfw), 0.0f);
    corr.assign(static_cast<size_t>(sub_rows * n), 0.0f);  // (rows, n) zero-point corrections
    sz.assign(static_cast<size_t>(p.gpr), 0.0f);           // (gpr) s_g * z_g of one row
    out.assign(16, 0.0f);
#pragma omp for schedule(static)
    for (int64_t ch = 0; ch < nchunks; ++ch) {
      const int64_t r_end = std::min(w.rows, (ch + 1) * rc);
      if (n == 1) {
        int64_t r = ch * rc;
        for (; r + R <= r_end; r += R) {
          const uint8_t* rows[R];
          const float* sfs[R];
          for (int i = 0; i < R; ++i) {
            rows[i] = row_at(r + i);
            sfs[i] = sf.data() + i * sfw;
            corr[i] = 0.0f;
            if constexpr (D::kScaled) row_scales(w, r + i, p.gpr, zero_sym, sf.data() + i * sfw, zero_term ? sz.data() : nullptr);
            if constexpr (zero_term) zero_terms(sz.data(), p.xg.data(), p.gpr, 1, &corr[i]);
          }
          rows_tile<D, M, R>(rows, sfs, p, out.data());
          for (int i = 0; i < R; ++i) y[r + i] = out[i] - corr[i];
        }
        for (; r < r_end; ++r) {
          const uint8_t* row = row_at(r);
          corr[0] = 0.0f;
          if constexpr (D::kScaled) row_scales(w, r, p.gpr, zero_sym, sf.data(), zero_term ? sz.data() : nullptr);
          if constexpr (zero_term) zero_terms(sz.data(), p.xg.data(), p.gpr, 1, corr.data());
          y[r] = row_dot<D, M>(row, sf.data(), p) - corr[0];
        }
        continue;
      }
      for (int64_t r0 = ch * rc; r0 < r_end; r0 += sub_rows) {
        const int64_t nr = std::min(sub_rows, r_end - r0);
        if constexpr (D::kScaled) {
          for (int64_t i = 0; i < nr; ++i) {
            row_scales(w, r0 + i, p.gpr, zero_sym, sf.data() + i * sfw, zero_term ? sz.data() : nullptr);
            if constexpr (zero_term) zero_terms(sz.data(), p.xg.data(), p.gpr, n, corr.data() + i * n);
          }
        }
        // One T-token tile (or a single leftover token) over every row pair of the sub-chunk.
        const auto tokens = [&]<int TT>(int64_t t0) {
          for (int64_t i = 0; i < nr; i += 2) {
            const int64_t i1 = std::min(i + 1, nr - 1);  // an odd last row runs as its own pair
            const uint8_t* rows[2] = {row_at(r0 + i), row_at(r0 + i1)};
            const float* sfs[2] = {sf.data() + i * sfw, sf.data() + i1 * sfw};
            pair_tile<D, M, TT>(rows, sfs, p, t0, out.data());
            for (int64_t k = 0; k < 1 + (i1 > i); ++k)
              for (int t = 0; t < TT; ++t) {
                const float c = zero_term ? corr[(i + k) * n + t0 + t] : 0.0f;
                y[(t0 + t) * w.rows + r0 + i + k] = out[k * TT + t] - c;
              }
          }
        };
        int64_t t0 = 0;
        for (; t0 + T <= n; t0 += T) tokens.template operator()<T>(t0);
        for (; t0 < n; ++t0) tokens.template operator()<1>(t0);
      }
    }
  }
}

// Groups per block for the lane-scale layout, or -1 when the group width does not fit it
// (not a whole number of words, or neither a multiple nor a divisor of the block).
inline int groups_per_block(const QTensor& w, int F) {
  const int64_t g = w.scheme.group_width(w.cols), EB = L * F;
  if (w.scheme.groups_per_row(w.cols) <= 1 || g % EB == 0) return 0;
  if (g % F == 0 && EB % g == 0) return static_cast<int>(EB / g);
  return -1;
}

// Scalar weight-only product for shapes the block layout cannot serve (e.g. group 48 on int4).
void gemm_scalar(const QTensor& w, const float* x, int64_t n, float* y, int threads);

// Dispatches run<D, M> over the supported group layouts; falls back to gemm_scalar.
template <class D>
void run_any(const QTensor& w, const float* x, int64_t n, float* y, int threads) {
  switch (D::kScaled ? groups_per_block(w, D::F) : 0) {
    case 0: return run<D, 0>(w, x, n, y, threads);
    case 2: return run<D, 2>(w, x, n, y, threads);
    case 4: return run<D, 4>(w, x, n, y, threads);
    case 8: return run<D, 8>(w, x, n, y, threads);
    case 16: return run<D, 16>(w, x, n, y, threads);
    default: return gemm_scalar(w, x, n, y, threads);
  }
}

}  // namespace mq::kdetail

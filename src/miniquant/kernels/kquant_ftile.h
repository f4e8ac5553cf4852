// The weight-only K kernel from 8 tokens (kMinTokens) on AVX-512: a register tile of 12 rows x 32 tokens over each
// super-block's dequantized weights, in place of the dequantized panels and Eigen's GEMM (kquant.cpp's
// run_kquant_panels, which stays for AVX2 and NEON, where this tile has not been measured).
//
// Why: the panels wrote every row's 4096 weights to memory as floats and then Eigen packed both operands again for
// each 256-row panel (the activations once per panel); at 64 tokens q4_k ran at 44% of the machine's fp32 FMA probe
// and 0.56x-0.64x of ggml's repacked q4_K (bench/README.md's table of 2026-12-01, before this tile). Here a block's
// weights are decoded once per call (the family's decoder and kdecode::dequantize, or q4_k's own conversion below;
// the values gemm_ref multiplies, bit for bit) into a 12 x 256 buffer in L1, and multiplied there; the activations
// are transposed once per call so that a column's 32 tokens are two vectors, and every weight is one broadcast
// operand of two FMAs.
//
// Loop order: super-block b outermost, so one block's activations (256 columns x the batch, 64 KiB at 64 tokens) stay
// in L2 while every row meets them; each row group's partial sums (12 x the batch) go to memory between blocks and
// to y after the last. The row groups of a block are split statically among the threads, the same split for every
// block, so a thread owns its partial sums with no barrier between blocks.
//
// Error: each output is one fp32 chain over the row's columns in order (the product of the rounded weight value
// and x, then the add): at most cols + 1 roundings against the exact product of the stored values, relative to
// sum_j |w_j| |x_j|, below the gamma(cols + 17) of kmagnitude_at that tests/test_kernels.cpp holds every
// weight-only K kernel to. The order does not depend on the thread count.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/kquant_decode.h"
#include "miniquant/kernels/word_kernel.h"  // effective_threads
#include "miniquant/kquant.h"

#if defined(__AVX512F__)
#define MQ_KQUANT_FTILE 1
#else
#define MQ_KQUANT_FTILE 0
#endif

#if MQ_KQUANT_FTILE
#include <immintrin.h>

namespace mq::kdetail::ftile {

using B = xsimd::batch<float>;
inline constexpr int kW = static_cast<int>(B::size);  // 16 floats
// The tile: kRows x kVecs accumulators (24 of the 32 registers), two activation vectors and a broadcast weight. 8, 10,
// 12 and 14 rows by 2 vectors, 6 rows by 4 and steps of 2 and 4 super-blocks all ran within 5% of one another at 64
// tokens (q2_k, q4_k, q6_k, 4096x4096 and 4096x11008, one thread), 4 rows by 4 20-30% slower; 12 x 2 was ahead at 16.
inline constexpr int kVecs = 2;
inline constexpr int kGroup = kVecs * kW;  // tokens per full group
static_assert(kVecs == 2, "n_pad is a multiple of kW: the last group is then kGroup or kW tokens wide");
inline constexpr int kRows = 12;
inline constexpr int kCols = kSuperBlock;  // columns per step: one super-block
// Weight-only K takes the tile from this many tokens (kquant.cpp). Its 16-token group costs about what the fused
// float blocks (kquant_fused.h) take for 8 tokens and half what they take for 15 (4096x4096, one thread, every
// family: 3.4-4.5 ms against 4.2-4.7 at 8 and 8.3-9.2 at 15; bench/HISTORY.md, 2026-12-01).
inline constexpr int64_t kMinTokens = 8;

// x transposed by block and token group: the block b's group of tokens g0 .. g0 + width - 1 is (kCols, width) at
// xt + b kCols n_pad + g0 kCols, element (c, t) = x[(g0 + t) cols + b kCols + c], zero for tokens at n and past.
// Groups are kGroup tokens wide; the last is kW wide where n_pad leaves kW tokens for it.
// x: (n, cols);  xt: (cols / kCols, n_pad, kCols) in that order of groups.
inline void pack_tokens(const float* x, int64_t n, int64_t cols, int64_t n_pad, float* xt) {
  for (int64_t c0 = 0; c0 < cols; c0 += kCols)
    for (int64_t g0 = 0; g0 < n_pad; g0 += kGroup) {
      const int64_t width = std::min<int64_t>(kGroup, n_pad - g0);
      float* out = xt + c0 * n_pad + g0 * kCols;
      for (int64_t t = 0; t < width; ++t) {
        const int64_t tok = g0 + t;
        if (tok < n) {
          const float* src = x + tok * cols + c0;
          for (int c = 0; c < kCols; ++c) out[c * width + t] = src[c];
        } else {
          for (int c = 0; c < kCols; ++c) out[c * width + t] = 0.0f;
        }
      }
    }
}

// One block on one row group and one token group of TB vectors: (kRows, TB kW) += wf (kRows, kCols) times xt
// (kCols, TB kW). part: (kRows, ld) the group's sums so far, read unless first; out: (kRows, ld_out) where the sums
// go (part again, or the tile the caller scatters to y after the last block).
template <int TB>
[[gnu::always_inline]] inline void block_step(const float* wf, const float* xt, const float* part, int64_t ld, bool first,
                                              float* out, int64_t ld_out) {
  B acc[kRows][TB];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < TB; ++j) acc[r][j] = first ? B(0.0f) : B::load_aligned(part + r * ld + j * kW);
  for (int c = 0; c < kCols; ++c) {
    B xv[TB];
#pragma GCC unroll 2
    for (int j = 0; j < TB; ++j) xv[j] = B::load_aligned(xt + c * TB * kW + j * kW);
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const B wv(wf[r * kCols + c]);  // a broadcast memory operand of the FMAs
#pragma GCC unroll 2
      for (int j = 0; j < TB; ++j) acc[r][j] = xsimd::fma(wv, xv[j], acc[r][j]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < TB; ++j) acc[r][j].store_aligned(out + r * ld_out + j * kW);
}

// One block's 256 weights into the tile's buffer: the family's decoder into a code buffer, then kdecode::dequantize.
// blk: the block's bytes;  w: (kCols).
template <class Dec>
[[gnu::always_inline]] inline void dequantize(const uint8_t* blk, float* w) {
  KGrid g;
  alignas(64) uint8_t codes[kSuperBlock];
  Dec::decode(blk, g, codes);
  kdecode::dequantize<Dec>(g, codes, w);
}
// q4_k straight from its bytes. The generic pair stored the codes as 32-byte halves (unpack_halves) and read them
// back with 64-byte loads, which the store buffer cannot forward, so each conversion waited for the stores to retire,
// and gcc moved the 6-bit scales through stack bytes: the 64-token tile's q4_k took 8% longer than its q2_k, and
// outside the FMAs it spent 27% of its samples against q2_k's 21% (perf annotate, 4096x4096, one thread,
// 2026-12-01). Here the twelve scale bytes are three 32-bit words, the eight scales and eight mins become one vector
// of floats, and the codes go from the nibbles to floats in registers. Each weight is kvalue's D (q - 0) - M with
// D = d sc and M = dmin m, contracted as the compiler contracts it there (tests/test_kernels.cpp: bit for bit).
// The scales are unpacked in general registers, not by the `+a8` block's vector unpack (Q4KVnni::steps, the same
// masks): in this FMA-bound loop that one ran 1.5-2.4% slower (two builds alternated in 4 rounds, 64 tokens).
template <>
[[gnu::always_inline]] inline void dequantize<kdecode::Q4K>(const uint8_t* blk, float* w) {
  using Blk = kblocks::BlockQ4K;
  uint32_t a, b, c;  // scale bytes 0-3, 4-7, 8-11 (kbits::pack_scales_mins6's layout)
  std::memcpy(&a, blk + offsetof(Blk, scales), 4);
  std::memcpy(&b, blk + offsetof(Blk, scales) + 4, 4);
  std::memcpy(&c, blk + offsetof(Blk, scales) + 8, 4);
  const uint32_t sc_lo = a & 0x3F3F3F3Fu, m_lo = b & 0x3F3F3F3Fu;  // sub-blocks 0-3: six bits in place
  const uint32_t sc_hi = (c & 0x0F0F0F0Fu) | ((a >> 6) & 0x03030303u) << 4;  // 4-7: low nibble, top two bits
  const uint32_t m_hi = ((c >> 4) & 0x0F0F0F0Fu) | ((b >> 6) & 0x03030303u) << 4;
  const __m512 factor = _mm512_castsi512_ps(_mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_castps_si256(_mm256_set1_ps(kdecode::load_f16(blk + offsetof(Blk, d))))),
      _mm256_castps_si256(_mm256_set1_ps(kdecode::load_f16(blk + offsetof(Blk, dmin)))), 1));
  alignas(64) float dm[16];  // D_0 .. D_7, M_0 .. M_7
  _mm512_store_ps(dm, _mm512_mul_ps(factor, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
                                                _mm_set_epi32(static_cast<int>(m_hi), static_cast<int>(m_lo),
                                                              static_cast<int>(sc_hi), static_cast<int>(sc_lo))))));
  const __m512i nib = _mm512_set1_epi32(15);
  for (int j = 0; j < 4; ++j) {  // bytes 32 j .. 32 j + 31: weights 64 j + l (low nibble) and 64 j + 32 + l (high)
    const uint8_t* q = blk + offsetof(Blk, qs) + 32 * j;
    const __m512 d0 = _mm512_set1_ps(dm[2 * j]), m0 = _mm512_set1_ps(dm[8 + 2 * j]);
    const __m512 d1 = _mm512_set1_ps(dm[2 * j + 1]), m1 = _mm512_set1_ps(dm[8 + 2 * j + 1]);
    for (int h = 0; h < 2; ++h) {
      const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16 * h)));
      _mm512_store_ps(w + 64 * j + 16 * h, _mm512_fmsub_ps(d0, _mm512_cvtepi32_ps(_mm512_and_si512(v, nib)), m0));
      _mm512_store_ps(w + 64 * j + 32 + 16 * h, _mm512_fmsub_ps(d1, _mm512_cvtepi32_ps(_mm512_srli_epi32(v, 4)), m1));
    }
  }
}

// y = x W^T for a K tensor of the family Dec.  x: (n, cols);  y: (n, rows).
template <class Dec>
void run(const QTensor& w, const KFamily& f, const float* x, int64_t n, float* y, int threads) {
  const int64_t rows = w.rows, cols = w.cols, nb = cols / kCols;
  const int64_t n_pad = (n + kW - 1) / kW * kW;
  const int64_t groups = (rows + kRows - 1) / kRows;
  const int64_t row_bytes = w.row_bytes();  // a format-table look-up: once per call
  // The calling thread's buffers, kept between calls; the workers see them through the pointers below.
  thread_local std::vector<float, xsimd::aligned_allocator<float, 64>> xt_buf, part_buf;
  xt_buf.resize(static_cast<size_t>(cols * n_pad));              // (nb, n_pad, kCols) packed activations
  part_buf.resize(static_cast<size_t>(groups * kRows * n_pad));  // (groups kRows, n_pad) partial sums
  pack_tokens(x, n, cols, n_pad, xt_buf.data());
  const float* xt = xt_buf.data();
  float* part = part_buf.data();
  const int nt = effective_threads(threads, rows * cols * n);
#pragma omp parallel num_threads(nt)
  {
    alignas(64) float wf[kRows * kCols];     // (kRows, kCols) the row group's block, dequantized
    alignas(64) float tile[kRows * kGroup];  // (kRows, kGroup) the last block's sums, before the scatter to y
    for (int64_t b = 0; b < nb; ++b) {
      const bool first = b == 0, last = b + 1 == nb;
      // static: the same groups to the same thread for every b, so no thread reads sums another one writes.
#pragma omp for schedule(static) nowait
      for (int64_t gi = 0; gi < groups; ++gi) {
        const int64_t r0 = gi * kRows;
        const int nr = static_cast<int>(std::min<int64_t>(kRows, rows - r0));
        for (int k = 0; k < kRows; ++k)  // a short group repeats its last row in the spare slots
          dequantize<Dec>(w.codes.data() + (r0 + std::min(k, nr - 1)) * row_bytes + b * f.block_bytes, wf + k * kCols);
        float* pg = part + r0 * n_pad;
        for (int64_t t0 = 0; t0 < n_pad; t0 += kGroup) {
          const float* xg = xt + b * kCols * n_pad + t0 * kCols;
          float* out = last ? tile : pg + t0;
          const int64_t ld_out = last ? kGroup : n_pad;
          if (n_pad - t0 >= kGroup)
            block_step<kVecs>(wf, xg, pg + t0, n_pad, first, out, ld_out);
          else
            block_step<1>(wf, xg, pg + t0, n_pad, first, out, ld_out);
          if (last) {
            const int64_t tokens = std::min<int64_t>(kGroup, n - t0);  // t0 < n: n_pad - n < kW <= the group
            for (int64_t t = 0; t < tokens; ++t)
              for (int k = 0; k < nr; ++k) y[(t0 + t) * rows + r0 + k] = tile[k * kGroup + t];
          }
        }
      }
    }
  }
}

}  // namespace mq::kdetail::ftile
#endif

// The lookup-table kernel for int2 weight-only decode (T-MAC's idea: Wei et al., 2024, "T-MAC: CPU Renaissance via
// Table Lookup for Low-Bit LLM Deployment on Edge") on the 16-row block layout (kernels/blocked.h): bench-only code,
// shared by the two programs that time it, bench_lut.cpp (against our bf16-dot tile, where its design is written
// down) and vs_ggml (against ggml's q2_K, pairs.h). No registry row selects it (bench/HISTORY.md says why).
// lut_kernel16.h is the same kernel with 16-bit tables.
//
//   gemm_lut(w, x, n, y, threads, use_isa)   y (n, rows) = W x, x (n, cols); use_isa: the AVX-512 tile, else its
//                                            portable twin (the same sums in the same order: bit for bit equal)
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "miniquant/aligned.h"
#include "miniquant/half.h"
#include "miniquant/kernels/blocked.h"

namespace mqbench::lut {

using mq::BlockedCodes;
using mq::Int2Family;

constexpr int64_t kPairs = Int2Family::kColumns / 2;  // column pairs (tables) per step

// One call's tables. tab: (n, cols_pad / 2, 16) floats, pair p of token t = columns 2p, 2p + 1 (zero past cols);
// sum: (n, groups) each group's activation sum, asymmetric schemes only.
struct LutActs {
  int64_t n = 0, pairs = 0;
  mq::AlignedVector<float> tab;
  std::vector<float> sum;
};

// Group g's activation sum of one token xt (asymmetric schemes' -z sum(x) term), taken in double: exact enough that
// the term adds no error of its own order.
inline float group_sum(const BlockedCodes& w, const float* xt, int64_t g) {
  double s = 0.0;
  for (int64_t c = g * w.group_k; c < std::min(w.cols, (g + 1) * w.group_k); ++c) s += xt[c];
  return static_cast<float>(s);
}

// Entry i of a column pair's table is c0[i] x0 + c1[i] x1: the pair's two fields (i & 3, i >> 2) minus z0, the
// symmetric schemes' zero (asymmetric ones add theirs through the group sums).
struct EntryFields {
  alignas(64) float c0[16], c1[16];
};
inline EntryFields entry_fields(const BlockedCodes& w) {
  EntryFields f;
  const float z0 = w.scheme.symmetric ? static_cast<float>(w.zero_sym) : 0.0f;
  for (int i = 0; i < 16; ++i) {
    f.c0[i] = static_cast<float>(i & 3) - z0;
    f.c1[i] = static_cast<float>(i >> 2) - z0;
  }
  return f;
}

// The fp32 entries of column pairs [p0, p1) of one token xt (cols columns; pair p = columns 2p, 2p + 1, zero past
// cols) into out, 16 per pair from pair p0 on; returns their largest |entry| (the 16-bit tables' group scale) when
// kMax, else 0 (the fp32 tables need no maximum, and a decode call builds them per token: no work it does not use).
template <bool kMax>
float fill_entries(const EntryFields& f, const float* xt, int64_t cols, int64_t p0, int64_t p1, float* out) {
  float mx = 0.0f;
  int64_t p = p0;
#if defined(__AVX512F__)
  const __m512 v0 = _mm512_load_ps(f.c0), v1 = _mm512_load_ps(f.c1);
  __m512 vm = _mm512_setzero_ps();
  for (; p < p1 && 2 * p + 1 < cols; ++p) {  // pairs with both columns inside the row
    const __m512 e = _mm512_fmadd_ps(v1, _mm512_set1_ps(xt[2 * p + 1]), _mm512_mul_ps(v0, _mm512_set1_ps(xt[2 * p])));
    _mm512_storeu_ps(out + 16 * (p - p0), e);
    if constexpr (kMax) vm = _mm512_max_ps(vm, _mm512_abs_ps(e));
  }
  if constexpr (kMax) mx = _mm512_reduce_max_ps(vm);
#endif
  const auto put = [&](int64_t q, float x0, float x1) {
    for (int i = 0; i < 16; ++i) {
      const float e = std::fma(f.c1[i], x1, f.c0[i] * x0);
      out[16 * (q - p0) + i] = e;
      if constexpr (kMax) mx = std::max(mx, std::fabs(e));
    }
  };
  // Three loops, not one with `2p < cols ? xt[2p] : 0`: gcc 12 at -O3 -march=znver3 vectorized that select into
  // loads past the row's end (valgrind: reads after x; test_lut_kernels' tables came out garbage on AVX2 builds).
  for (; p < p1 && 2 * p + 1 < cols; ++p) put(p, xt[2 * p], xt[2 * p + 1]);  // both columns inside the row
  if (p < p1 && 2 * p < cols) {  // an odd row's last column
    put(p, xt[2 * p], 0.0f);
    ++p;
  }
  for (; p < p1; ++p) put(p, 0.0f, 0.0f);                                     // padding past cols
  return mx;
}

// The calling thread's tables for x (n, cols): assign keeps the capacity, so a warm decode call allocates nothing.
inline const LutActs& make_tables(const BlockedCodes& w, const float* x, int64_t n) {
  thread_local LutActs a;
  a.n = n;
  a.pairs = w.cols_pad / 2;
  a.tab.assign(static_cast<size_t>(n * a.pairs * 16), 0.0f);
  a.sum.assign(w.scheme.symmetric ? 0 : static_cast<size_t>(n * w.groups), 0.0f);
  const EntryFields f = entry_fields(w);
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x + t * w.cols;
    fill_entries<false>(f, xt, w.cols, 0, a.pairs, a.tab.data() + t * a.pairs * 16);
    for (int64_t g = 0; g < (a.sum.empty() ? 0 : w.groups); ++g) a.sum[t * w.groups + g] = group_sum(w, xt, g);
  }
  return a;
}

// The portable twin: the same entries looked up field by field from the block layout, the same sums in the same order.
inline void lut_twin(const BlockedCodes& w, const LutActs& a, float* y, int threads) {
  const int64_t steps = w.group_k / Int2Family::kColumns;
  mq::for_each_block_output(w, a.n, y, threads, [&](int64_t b, int64_t t, int l) {
    const uint8_t* codes = w.block_codes(b);
    float out = 0.0f;
    for (int64_t g = 0; g < w.groups; ++g) {
      float p = w.scheme.symmetric ? 0.0f : static_cast<float>(w.block_zeros(b, g)[l]) * -a.sum[t * w.groups + g];
      for (int64_t q = g * steps * kPairs; q < (g + 1) * steps * kPairs; ++q) {
        const int u0 = mq::block_field(codes, Int2Family::slot(l, 2 * q), 2), u1 = mq::block_field(codes, Int2Family::slot(l, 2 * q + 1), 2);
        p += a.tab[static_cast<size_t>((t * a.pairs + q) * 16 + u0 + 4 * u1)];
      }
      out = std::fma(p, mq::f16_to_f32(w.block_scales(b, g)[l]), out);
    }
    return out;
  });
}

#if defined(__AVX512F__)
// Token t's outputs of R blocks from b0 (out: R vectors of 16 rows), the rows past w.rows masked off (W: any 16-row
// block layout with `rows`: BlockedCodes, the K tables' chunks).
template <int R, class W>
void store_blocks(const W& w, int64_t b0, int64_t t, const __m512* out, float* y) {
  for (int r = 0; r < R; ++r) {
    const int valid = static_cast<int>(std::min<int64_t>(16, w.rows - 16 * (b0 + r)));
    _mm512_mask_storeu_ps(y + t * w.rows + 16 * (b0 + r), static_cast<__mmask16>((1u << valid) - 1u), out[r]);
  }
}

// Work items of 8 blocks (128 rows), split over the threads; the item's tokens inside, so its codes (128 KB at
// 4096 columns) stay in L2 while the tokens pass over them. tile(R, b0, t) runs R blocks from b0 for token t (R an
// std::integral_constant: 8, or 1 for the last item's blocks). W: any 16-row block layout with `blocks`.
template <class W, class Tile>
void for_each_item(const W& w, int64_t n, int threads, Tile&& tile) {
  constexpr int64_t kItem = 8;
  const int64_t items = (w.blocks + kItem - 1) / kItem;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t it = 0; it < items; ++it) {
    const int64_t b0 = it * kItem, b1 = std::min(w.blocks, b0 + kItem);
    for (int64_t t = 0; t < n; ++t) {
      if (b1 - b0 == kItem) tile(std::integral_constant<int, kItem>{}, b0, t);
      else
        for (int64_t b = b0; b < b1; ++b) tile(std::integral_constant<int, 1>{}, b, t);
    }
  }
}

// for_each_item with the scheme's symmetry as a second compile-time argument: tile(R, Sym, b0, t), Sym a
// std::bool_constant (symmetric schemes skip the zero-point term).
template <class Tile>
void run_tiles(const BlockedCodes& w, int64_t n, int threads, Tile&& tile) {
  if (w.scheme.symmetric) for_each_item(w, n, threads, [&](auto r, int64_t b0, int64_t t) { tile(r, std::true_type{}, b0, t); });
  else for_each_item(w, n, threads, [&](auto r, int64_t b0, int64_t t) { tile(r, std::false_type{}, b0, t); });
}

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
        __builtin_prefetch(wp[r] + mq::kBlockPrefetchBytes);  // past the end is harmless
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
  store_blocks<R>(w, b0, t, out, y);
}

#endif

// y = W x for n tokens by table lookup (use_isa: the AVX-512 tile where built, else the twin).
inline void gemm_lut(const BlockedCodes& w, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  const LutActs& a = make_tables(w, x, n);
#if defined(__AVX512F__)
  if (use_isa)
    return run_tiles(w, n, std::max(1, threads), [&](auto r, auto sym, int64_t b0, int64_t t) { tile<decltype(r)::value, decltype(sym)::value>(w, b0, a, t, y); });
#endif
  (void)use_isa;
  lut_twin(w, a, y, std::max(1, threads));
}

}  // namespace mqbench::lut

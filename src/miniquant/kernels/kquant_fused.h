// Each K family's fused block (isa_x86_kdot.h's Q2KVnni .. Q6KVnni on AVX-512 VNNI, isa_x86_kfused_avx2.h's
// avx2::Q2K .. Q6K on AVX2), by its decoder, and the fp32-activation step on those blocks: the weight-only K kernel
// below the batch kernels (kquant.cpp), the `+a8` one (kquant_dynamic.cpp) on the same loads. What follows describes
// the AVX-512 step; the AVX2 one is the same in 8-lane vectors of 32 codes (its header).
//
// Why the weight-only path reuses the `+a8` blocks: its per-token kernel first stored the block's 256 codes
// through the family's decoder, then widened them from memory, and was 0.26x-0.42x of ggml's K kernels at one
// token (bench/README.md); the fused loads split the codes from the block's bytes in registers (four vectors of
// 64 one-byte codes, code order) and decode the steps by vector operations. Against float activations the four
// codes of each 32-bit lane are taken one byte position at a time: field i of lane l of code vector k is code
// 64 k + 4 l + i. A field becomes floats by an in-register table where the codes allow (vpermps reads only the
// low 4 bits of each index, vpermt2ps the low 5: no mask and no int -> float convert), else by a mask and a
// convert (q6_k's 64 codes); it meets the activations permuted once per call into the same order (permute_lanes).
// Per 16 weights: a shift, the widening and one FMA. Each lane's sum of four fields is scaled by its step D_b
// (the blocks' d vectors) once per 64 codes, and the C_b terms (D_b zero + M_b) take the per-call sums of x over
// each sub-block, as the `+a8` step takes the sums of the codes: exactly the weight-only kernel's algebra,
//   sum_j w_j x_j = sum_b (D_b sum_{j in b} q_j x_j - C_b sum_{j in b} x_j).
// Error against the exact product, relative to sum_j (|D_b| (q_j + zero) + |M_b|) |x_j| (kmagnitude_at): a lane's
// four products and their sums (4 roundings), its D_b scaling and the two-chain join (3), the row's chain over
// its blocks (cols / 256), the C_b terms and their sums of x (sub + cols / sub), the final lane sums (8): fewer
// than the gamma(cols + 17) that tests/test_kernels.cpp holds every weight-only K kernel to.
#pragma once
#include <cstdint>
#include <type_traits>
#include <utility>

#include "miniquant/kernels/isa_x86_kdot.h"
#include "miniquant/kernels/isa_x86_kfused_avx2.h"
#include "miniquant/kernels/kquant_decode.h"

// MQ_KFUSED: fused blocks of some width are compiled (then the K rows run them below their batch kernels).
#define MQ_KFUSED (MQ_KDOT_FUSED || MQ_KFUSED_AVX2)

#if MQ_KFUSED
namespace mq::kdetail {
// Each family's fused block, by its decoder: a table of types, read at compile time by the family's rows; VNNI where
// compiled, else AVX2. FusedAvx2Of: the AVX2 blocks, which tests/test_kernels.cpp also runs on AVX-512 builds.
template <class Dec> struct FusedOf;
#if MQ_KFUSED_AVX2
template <class Dec> struct FusedAvx2Of;
template <> struct FusedAvx2Of<kdecode::Q2K> { using type = avx2::Q2K; };
template <> struct FusedAvx2Of<kdecode::Q3K> { using type = avx2::Q3K; };
template <> struct FusedAvx2Of<kdecode::Q4K> { using type = avx2::Q4K; };
template <> struct FusedAvx2Of<kdecode::Q5K> { using type = avx2::Q5K; };
template <> struct FusedAvx2Of<kdecode::Q6K> { using type = avx2::Q6K; };
#endif
#if MQ_KDOT_FUSED
template <> struct FusedOf<kdecode::Q2K> { using type = Q2KVnni; };
template <> struct FusedOf<kdecode::Q3K> { using type = Q3KVnni; };
template <> struct FusedOf<kdecode::Q4K> { using type = Q4KVnni; };
template <> struct FusedOf<kdecode::Q5K> { using type = Q5KVnni; };
template <> struct FusedOf<kdecode::Q6K> { using type = Q6KVnni; };
#else
template <class Dec> struct FusedOf : FusedAvx2Of<Dec> {};
#endif

// The token count as a template argument: calls f(std::integral_constant<int, k>{}) for the k in 1 .. kMax equal
// to n and returns true, or returns false (f not called) when n is outside. One instantiation of f per count, so a
// row's per-token sums can be an array of fixed size, which the compiler keeps in registers (the fused rows of
// both contracts: with a run-time count the sums lived in memory, bench/HISTORY.md 2026-12-01).
template <int kMax, class F>
bool with_token_count(int64_t n, F&& f) {
  return [&]<int... k>(std::integer_sequence<int, k...>) {
    return ((n == k + 1 ? (f(std::integral_constant<int, k + 1>{}), true) : false) || ...);
  }(std::make_integer_sequence<int, kMax>{});
}

// Software prefetch of a K row's codes kRowAheadBytes ahead of the block being loaded, for the fused rows of both
// contracts (kquant.cpp's weight-only float rows, kquant_dynamic.cpp's `+a8` rows). Distance 4096: q6_k 4096x11008
// from DRAM on the Zen 4 VM took 98 ps per weight at 1024 bytes, 75 at 2048, 59 at 4096, 66-69 from 8192 to 32768.
inline constexpr int64_t kRowAheadBytes = 4096;
// Whether a call's fused rows prefetch: where its codes (weight_bytes) are too many to stay in any L2 we run on, or
// where its float activations (x_bytes; 0 for `+a8`, whose int8 codes are a quarter of them) pass 24 KiB and no longer
// stay in L1 beside the codes (their reloads from L2 take the fill buffers the hardware prefetcher needs).
//  - Activations, weight-only, Zen 4 VM, 15 interleaved rounds, one token, time without over time with: 4096x11008
//    q2_k / q4_k / q6_k 1.05x / 1.83x / 2.45x (1 thread), 1.71x / 2.32x / 2.69x (4 copies, 2 threads); q6_k had run at
//    134 ps per weight against 33 at 4096x4096.
//  - Codes, on the 2-vCPU AMX Xeon (2026-12-02, one token, vs_ggml with the prefetch switched per process, time
//    without over time with; bench/HISTORY.md). `+a8`, 1 and 2 threads, one run each: from DRAM 4096x4096 q2_k
//    1.86x / 2.13x, q4_k 1.31x / 1.22x, q6_k 1.15x / 1.04x; 4096x11008 q2_k 1.77x / 1.89x, q4_k 1.06x / 1.12x, q6_k
//    1.08x / 1.13x; hot (its L3) 0.84x-1.40x, q6_k 4096x4096 0.85x / 0.86x the worst. Weight-only, 4096x4096, 1
//    thread, two runs each: from DRAM q2_k 1.24x-1.30x, q4_k 1.04x-1.33x, q6_k 1.30x-1.47x; hot 1.00x-1.14x. On the
//    Zen 4 VM the weight-only rows at 4096x4096 had measured 0.99x-1.03x from DRAM and 0.94x-0.99x in cache: the price
//    on Zen of a rule that serves the Xeon's DRAM; the `+a8` rows were not measured on Zen with it.
//  - 4 MiB: above the 2 MB L2 of that Xeon and the 1 MB of Zen 4 / 5; below every 4096-wide K matrix (5.5 MB for
//    q2_k 4096x4096). MiniGPT's Linears (at most 1024x256) stay under it.
inline constexpr int64_t kRowAheadFromWeightBytes = int64_t{4} << 20;
inline constexpr int64_t kRowAheadFromXBytes = 24 * 1024;
inline bool prefetch_rows(int64_t weight_bytes, int64_t x_bytes) {
  return weight_bytes >= kRowAheadFromWeightBytes || x_bytes > kRowAheadFromXBytes;
}
// A hint (it never faults); past the end of the codes it names no object, so the address is formed as an integer.
[[gnu::always_inline]] inline void prefetch_block_ahead(const uint8_t* block, int64_t block_bytes) {
  const uintptr_t ahead = reinterpret_cast<uintptr_t>(block) + kRowAheadBytes;
  for (int64_t o = 0; o < block_bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(ahead + static_cast<uintptr_t>(o)), _MM_HINT_T0);
}

// Whether a fused block has a load without lane shuffles, against activations in its order (Q45KVnni::load_raw;
// the per-row paths of both contracts take it, KTile keeps the plain load).
template <class Fused>
inline constexpr bool kRawLoad = requires { Fused::kHasRaw; };

// x in the fused blocks' field order, 4 W values at a time (W = Fused::kLanes): xp[4 W k + W i + l] = x[4 W k + 4 l + i].
// x, xp: (cols), cols a multiple of 64 (every K row is whole super-blocks).
template <int W>
inline void permute_lanes(const float* x, int64_t cols, float* xp) {
  for (int64_t c = 0; c < cols; c += 4 * W)
    for (int i = 0; i < 4; ++i)
      for (int l = 0; l < W; ++l) xp[c + W * i + l] = x[c + 4 * l + i];
}

#if MQ_KDOT_FUSED
// Field I of a code vector as floats (codes < kCodes, one per byte).
template <int kCodes, int I>
[[gnu::always_inline]] inline __m512 field_f32(__m512i q) {
  if constexpr (I > 0) q = _mm512_srli_epi32(q, 8 * I);
  const __m512 low = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  if constexpr (kCodes <= 16) {
    return _mm512_permutexvar_ps(q, low);  // index bits 0-3: the byte's code (its upper bits are zero)
  } else if constexpr (kCodes <= 32) {
    const __m512 high = _mm512_setr_ps(16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
    return _mm512_permutex2var_ps(low, q, high);  // index bits 0-4
  } else {
    if constexpr (I < 3) q = _mm512_and_si512(q, _mm512_set1_epi32(0xFF));
    return _mm512_cvtepi32_ps(q);
  }
}

// One token's step on a loaded block: xp the token's 256 permuted activations for this block, xsum their sums per
// sub-block (Fused::kNsub), acc the row's sums (Fused::Acc, read by Fused::sum).
template <class Fused, int kCodes>
[[gnu::always_inline]] inline void float_token(const typename Fused::Block& b, const float* xp, const float* xsum,
                                               typename Fused::Acc& acc) {
  __m512 p[4];
  for (int k = 0; k < 4; ++k) {
    const float* xk = xp + 64 * k;
    __m512 s = _mm512_mul_ps(field_f32<kCodes, 0>(b.q[k]), _mm512_loadu_ps(xk));
    s = _mm512_fmadd_ps(field_f32<kCodes, 1>(b.q[k]), _mm512_loadu_ps(xk + 16), s);
    s = _mm512_fmadd_ps(field_f32<kCodes, 2>(b.q[k]), _mm512_loadu_ps(xk + 32), s);
    p[k] = _mm512_fmadd_ps(field_f32<kCodes, 3>(b.q[k]), _mm512_loadu_ps(xk + 48), s);
  }
  // Two short chains joined, one add on the row's loop-carried path (as lane_sums for `+a8`).
  const __m512 t = _mm512_add_ps(_mm512_fmadd_ps(p[1], b.d[1], _mm512_mul_ps(p[0], b.d[0])),
                                 _mm512_fmadd_ps(p[3], b.d[3], _mm512_mul_ps(p[2], b.d[2])));
  acc.v = _mm512_add_ps(acc.v, t);
  Fused::offsets(b, xsum, acc);
}
#endif

// One token's float step on a loaded block of either width.
template <class Fused, int kCodes>
[[gnu::always_inline]] inline void fused_float_token(const typename Fused::Block& b, const float* xp, const float* xsum,
                                                     typename Fused::Acc& acc) {
#if MQ_KFUSED_AVX2
  if constexpr (Fused::kLanes == 8) return avx2::float_token<Fused, kCodes>(b, xp, xsum, acc);
#endif
#if MQ_KDOT_FUSED
  if constexpr (Fused::kLanes == 16) return float_token<Fused, kCodes>(b, xp, xsum, acc);
#endif
}
}  // namespace mq::kdetail
#endif

// The K families' fused blocks on AVX2 (with FMA and F16C): what isa_x86_kdot.h's Q2KVnni .. Q6KVnni do on AVX-512
// VNNI, in 256-bit vectors, for the CPUs without it (Zen 3, Xeons before Ice Lake). Where they were missing, such a
// CPU ran the decoder path below the batch kernels: per block and row the family's decoder stored 256 codes and
// decoded the scales one by one, then every token read the codes back (`+a8`: kquant_dynamic.cpp's run with
// KDotAvx2; weight-only: kquant.cpp's run_kquant, through a float copy of the codes). Here a block's codes are split
// from its bytes in registers and never stored, and the scales are decoded by vector operations, once per block and
// row for every token (bench/HISTORY.md, 2026-12-02, has the measured gain).
//
// Layout: code vector k (k < 8) holds codes 32 k .. 32 k + 31, one per byte, in code order; its 32-bit lane l holds
// codes 32 k + 4 l .. 32 k + 4 l + 3, all in one sub-block (sub-blocks are 16 or 32 codes). d[k] lane l is that
// sub-block's step D_b. Both contracts use the same loads:
//   `+a8`: per 32 bytes vpmaddubsw (u8 codes x s8 activations, adjacent pairs summed into int16: |q0 a0 + q1 a1| <=
//          2 * 63 * 127, never saturating) and vpmaddwd against ones: exact four-byte sums, converted and times D_b.
//   weight-only (float_token): field i of lane l of vector k (code 32 k + 4 l + i) as floats, by an in-register
//          table where the codes allow (vpermps reads the low 3 bits of each index: q2_k, q3_k) else a mask and a
//          convert, against the activations permuted once per call into that order (permute_lanes<8>).
// The C_b terms (D_b zero + M_b) take the per-call sums of a (or x) over each sub-block, as on VNNI:
//   sum_j w_j x_j = sum_b (D_b sum_{j in b} q_j x_j - C_b sum_{j in b} x_j).
// Rounding: per 32 codes one float sum of four fields (weight-only: 4 roundings; `+a8`: exact) and its D_b product,
// a tree of depth 3 over the block's eight vectors and one add per block on the row's chain, the C_b terms, the final
// lane sums (3): within the bounds tests/test_kernels.cpp holds every K kernel to (gamma(cols + 17) weight-only,
// gamma(cols + cols / 16 + 16) `+a8`), where these blocks are checked on every AVX2 build, AVX-512 ones included.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "miniquant/kquant/blocks.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define MQ_KFUSED_AVX2 1
#include <immintrin.h>
namespace mq::kdetail::avx2 {

inline float f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// q4_k / q5_k: the eight 6-bit scales and mins of the 12 scale bytes (kbits::unpack_scales_mins6's positions):
// bytes 0-7 the scales, 8-15 the mins. With u0, u1, u2 the three words: sc 0-3 = u0 & 0x3f.., sc 4-7 = u2 & 0x0f.. |
// (u0 >> 6 & 3..) << 4, m 0-3 = u1 & 0x3f.., m 4-7 = u2 >> 4 & 0x0f.. | (u1 >> 6 & 3..) << 4. s: the scale bytes, 16
// readable (the caller's static_assert).
inline __m128i scales_mins6_bytes(const uint8_t* s) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));  // u0 u1 u2 (and 4 bytes of qs)
  const __m128i lo = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(x, _MM_SHUFFLE(2, 1, 2, 0)), _mm_setr_epi32(0, 0, 0, 4)),
                                   _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
  const __m128i hi = _mm_slli_epi32(_mm_and_si128(_mm_srli_epi32(_mm_shuffle_epi32(x, _MM_SHUFFLE(1, 1, 0, 0)), 6),
                                                  _mm_setr_epi32(0, 0x03030303, 0, 0x03030303)), 4);
  return _mm_or_si128(lo, hi);
}

// q3_k: the sixteen 6-bit scales (sc + 32) of its 12 bytes, u0 u1 u2 the three words: low nibbles from u0, u1 (low
// halves for sub-blocks 0-7, high halves for 8-15), top two bits from u2: word w = (u_{w % 2} >> 4 (w / 2) & 0x0f..) |
// (u2 >> 2 w & 0x03..) << 4. blk: the block, whose scales are followed by d only: the 16-byte load starts two bytes
// early and drops them.
inline __m128i q3k_scale_bytes(const uint8_t* blk) {
  using Blk = kblocks::BlockQ3K;
  static_assert(offsetof(Blk, scales) + 12 + 2 == sizeof(Blk), "the scales end two bytes before the block");
  const __m128i x = _mm_srli_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(Blk, scales) - 2)), 2);
  const __m128i lo = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(x, _MM_SHUFFLE(1, 0, 1, 0)), _mm_setr_epi32(0, 0, 4, 4)),
                                   _mm_set1_epi32(0x0f0f0f0f));
  const __m128i hi = _mm_slli_epi32(_mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(x, _MM_SHUFFLE(2, 2, 2, 2)), _mm_setr_epi32(0, 2, 4, 6)),
                                                  _mm_set1_epi32(0x03030303)), 4);
  return _mm_or_si128(lo, hi);
}

// Bytes 0-7 (H = 0) or 8-15 (H = 1) of v, unsigned or signed, as eight floats.
template <int H>
inline __m256 u8_f32(__m128i v) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(H ? _mm_srli_si128(v, 8) : v));
}
template <int H>
inline __m256 i8_f32(__m128i v) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(H ? _mm_srli_si128(v, 8) : v));
}

// One stored bit per code above its low bits: code 32 j + l gets bit j of planes[l] at bit `shift` (q3_k's hmask at
// 2, q5_k's qh at 4; kdecode::high_bits is the scalar form). A 16-bit shift carries bits in from the neighbouring
// byte only above bit 0, which the mask drops.
inline void or_high_bits(const uint8_t* planes, int shift, __m256i* q) {
  const __m256i p = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(planes));
  const __m256i one = _mm256_set1_epi8(1);
  for (int j = 0; j < 8; ++j) {
    const __m256i bit = _mm256_and_si256(_mm256_srl_epi16(p, _mm_cvtsi32_si128(j)), one);
    q[j] = _mm256_or_si256(q[j], _mm256_sll_epi16(bit, _mm_cvtsi32_si128(shift)));
  }
}

// What every family's block shares: kNsub sub-blocks, the eight code vectors, the steps per lane, the C_b terms.
template <int kNsubT>
struct Base {
  static constexpr int kNsub = kNsubT;
  static constexpr int kLanes = 8;  // 32-bit lanes per vector: permute_lanes' and float_token's width
  static constexpr int kHalves = kNsub / 8;
  struct Acc {
    __m256 v;    // a token's D-scaled lane sums over the row
    __m256 off;  // its C_b sum_b terms over the row, per sub-block position (mod 8)
  };
  static Acc zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  struct Block {
    __m256i q[8];        // (8, 32) codes 32 k .. 32 k + 31
    __m256 d[8];         // (8, 8) D_b of each lane
    __m256 c[kHalves];   // (kNsub) C_b = D_b zero + M_b
  };
  // D, M: (kNsub) the sub-blocks' steps and mins, eight per vector; as the decoders, C_b = D_b zero + M_b in float.
  static void set_steps(const __m256* D, const __m256* M, float zero, Block& b) {
    for (int k = 0; k < 8; ++k) {
      if constexpr (kNsub == 8) {
        b.d[k] = _mm256_permutevar8x32_ps(D[0], _mm256_set1_epi32(k));  // vector k is sub-block k
      } else {  // lanes 0-3 sub-block 2 k, lanes 4-7 sub-block 2 k + 1
        const int j = 2 * (k % 4);
        b.d[k] = _mm256_permutevar8x32_ps(D[k / 4], _mm256_setr_epi32(j, j, j, j, j + 1, j + 1, j + 1, j + 1));
      }
    }
    for (int h = 0; h < kHalves; ++h) b.c[h] = _mm256_add_ps(_mm256_mul_ps(D[h], _mm256_set1_ps(zero)), M[h]);
  }
  // The C_b terms against sums per sub-block (kNsub): of the codes (`+a8`), of x (weight-only).
  static void offsets(const Block& b, const float* sums, Acc& acc) {
    for (int h = 0; h < kHalves; ++h) acc.off = _mm256_fmadd_ps(b.c[h], _mm256_loadu_ps(sums + 8 * h), acc.off);
  }
  // p[k] (the lane sums of vector k) times its steps, as a tree: one add on the row's loop-carried chain.
  static void add_scaled(const __m256* p, const Block& b, Acc& acc) {
    __m256 s[4];
    for (int i = 0; i < 4; ++i) s[i] = _mm256_fmadd_ps(p[2 * i + 1], b.d[2 * i + 1], _mm256_mul_ps(p[2 * i], b.d[2 * i]));
    acc.v = _mm256_add_ps(acc.v, _mm256_add_ps(_mm256_add_ps(s[0], s[1]), _mm256_add_ps(s[2], s[3])));
  }
  // `+a8`: a: (256) the token's codes for this block;  asum: (kNsub) their sums per sub-block.
  static void token(const Block& b, const int8_t* a, const float* asum, Acc& acc) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 p[8];
    for (int k = 0; k < 8; ++k) {
      const __m256i s16 = _mm256_maddubs_epi16(b.q[k], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 32 * k)));
      p[k] = _mm256_cvtepi32_ps(_mm256_madd_epi16(s16, ones));
    }
    add_scaled(p, b, acc);
    offsets(b, asum, acc);
  }
  // The row's dot: the lane sums less the C_b terms.
  static float sum(const Acc& acc) {
    const __m256 t = _mm256_sub_ps(acc.v, acc.off);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
  }
};

// q4_k and q5_k (kHigh): chunk c of the 128 code bytes (32 bytes) holds codes 64 c .. 64 c + 31 in its low nibbles
// and the next 32 in its high ones (kbits::unpack_halves); q5_k's fifth bit of code 32 j + l is bit j of qh[l].
template <bool kHigh>
struct Q45K : Base<8> {
  using Blk = std::conditional_t<kHigh, kblocks::BlockQ5K, kblocks::BlockQ4K>;
  static void load(const uint8_t* blk, Block& b) {
    static_assert(offsetof(Blk, dmin) == offsetof(Blk, d) + 2 && offsetof(Blk, scales) + 16 <= sizeof(Blk),
                  "d and dmin side by side; a 16-byte load at the scales stays in the block");
    const __m256i nib = _mm256_set1_epi8(0x0F);
    const uint8_t* qs = blk + offsetof(Blk, qs);
    for (int c = 0; c < 4; ++c) {
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c));
      b.q[2 * c] = _mm256_and_si256(x, nib);
      b.q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(x, 4), nib);
    }
    if constexpr (kHigh) or_high_bits(blk + offsetof(Blk, qh), 4, b.q);
    uint32_t dd;
    std::memcpy(&dd, blk + offsetof(Blk, d), 4);
    const __m128 df = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(dd)));  // d, dmin
    const __m128i sm = scales_mins6_bytes(blk + offsetof(Blk, scales));
    const __m256 D = _mm256_mul_ps(_mm256_broadcastss_ps(df), u8_f32<0>(sm));  // the decoders' float products
    const __m256 M = _mm256_mul_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(df)), u8_f32<1>(sm));
    set_steps(&D, &M, 0.0f, b);
  }
};
using Q4K = Q45K<false>;
using Q5K = Q45K<true>;

// q2_k and q3_k (kHigh): weight 128 h + 32 j + l in bits 2 j, 2 j + 1 of qs[32 h + l]: vector 4 h + j is one shift
// and a mask of qs's half h. q3_k's third bit of weight 32 j + l is bit j of hmask[l].
template <bool kHigh>
struct Q23K : Base<16> {
  using Blk = std::conditional_t<kHigh, kblocks::BlockQ3K, kblocks::BlockQ2K>;
  static void load(const uint8_t* blk, Block& b) {
    const __m256i three = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + offsetof(Blk, qs) + 32 * h));
      for (int j = 0; j < 4; ++j) b.q[4 * h + j] = _mm256_and_si256(_mm256_srl_epi16(x, _mm_cvtsi32_si128(2 * j)), three);
    }
    const __m256 d = _mm256_set1_ps(f16(blk + offsetof(Blk, d)));
    __m256 D[2], M[2];
    if constexpr (kHigh) {
      or_high_bits(blk + offsetof(Blk, hmask), 2, b.q);
      const __m128i sc = q3k_scale_bytes(blk);
      const __m256 off = _mm256_set1_ps(32.0f);  // sc - 32, exact in float
      D[0] = _mm256_mul_ps(d, _mm256_sub_ps(u8_f32<0>(sc), off));
      D[1] = _mm256_mul_ps(d, _mm256_sub_ps(u8_f32<1>(sc), off));
      M[0] = M[1] = _mm256_setzero_ps();
      set_steps(D, M, 4.0f, b);
    } else {
      const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(Blk, scales)));
      const __m128i nib = _mm_set1_epi8(0x0F);
      const __m128i lo = _mm_and_si128(sc, nib), hi = _mm_and_si128(_mm_srli_epi16(sc, 4), nib);
      const __m256 dmin = _mm256_set1_ps(f16(blk + offsetof(Blk, dmin)));
      D[0] = _mm256_mul_ps(d, u8_f32<0>(lo));
      D[1] = _mm256_mul_ps(d, u8_f32<1>(lo));
      M[0] = _mm256_mul_ps(dmin, u8_f32<0>(hi));
      M[1] = _mm256_mul_ps(dmin, u8_f32<1>(hi));
      set_steps(D, M, 0.0f, b);
    }
  }
};
using Q2K = Q23K<false>;
using Q3K = Q23K<true>;

// q6_k: per half h, ql's 64 bytes hold codes 128 h + l (low nibbles) and 128 h + 64 + l (high nibbles), and the two
// high bits of code 128 h + 32 i + l (i < 4, l < 32) are bits 2 i, 2 i + 1 of qh[32 h + l]. Zero 32.
struct Q6K : Base<16> {
  using Blk = kblocks::BlockQ6K;
  static void load(const uint8_t* blk, Block& b) {
    const __m256i nib = _mm256_set1_epi8(0x0F), three = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = blk + offsetof(Blk, ql) + 64 * h;
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + offsetof(Blk, qh) + 32 * h));
      const __m256i low[4] = {_mm256_and_si256(l0, nib), _mm256_and_si256(l1, nib),
                              _mm256_and_si256(_mm256_srli_epi16(l0, 4), nib), _mm256_and_si256(_mm256_srli_epi16(l1, 4), nib)};
      for (int i = 0; i < 4; ++i) {
        const __m256i high = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * i)), three);
        b.q[4 * h + i] = _mm256_or_si256(low[i], _mm256_slli_epi16(high, 4));
      }
    }
    // D_b = d sc_b with sc_b signed bytes: the decoder's float product.
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(Blk, scales)));
    const __m256 d = _mm256_set1_ps(f16(blk + offsetof(Blk, d)));
    const __m256 D[2] = {_mm256_mul_ps(d, i8_f32<0>(sc)), _mm256_mul_ps(d, i8_f32<1>(sc))};
    const __m256 M[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    set_steps(D, M, 32.0f, b);
  }
};

// Field I of a code vector as floats (codes < kCodes, one per byte).
template <int kCodes, int I>
[[gnu::always_inline]] inline __m256 field_f32(__m256i q) {
  if constexpr (I > 0) q = _mm256_srli_epi32(q, 8 * I);
  if constexpr (kCodes <= 8) {
    return _mm256_permutevar8x32_ps(_mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7), q);  // index bits 0-2: the byte's code
  } else {
    if constexpr (I < 3) q = _mm256_and_si256(q, _mm256_set1_epi32(0xFF));
    return _mm256_cvtepi32_ps(q);
  }
}

// Weight-only: one token's step on a loaded block. xp: the token's 256 activations of this block in field order
// (permute_lanes<8>: xp[32 k + 8 i + l] = x[32 k + 4 l + i]);  xsum: (Fused::kNsub) their sums per sub-block.
template <class Fused, int kCodes>
[[gnu::always_inline]] inline void float_token(const typename Fused::Block& b, const float* xp, const float* xsum,
                                               typename Fused::Acc& acc) {
  __m256 p[8];
  for (int k = 0; k < 8; ++k) {
    const float* xk = xp + 32 * k;
    __m256 s = _mm256_mul_ps(field_f32<kCodes, 0>(b.q[k]), _mm256_loadu_ps(xk));
    s = _mm256_fmadd_ps(field_f32<kCodes, 1>(b.q[k]), _mm256_loadu_ps(xk + 8), s);
    s = _mm256_fmadd_ps(field_f32<kCodes, 2>(b.q[k]), _mm256_loadu_ps(xk + 16), s);
    p[k] = _mm256_fmadd_ps(field_f32<kCodes, 3>(b.q[k]), _mm256_loadu_ps(xk + 24), s);
  }
  Fused::add_scaled(p, b, acc);
  Fused::offsets(b, xsum, acc);
}

}  // namespace mq::kdetail::avx2
#else
#define MQ_KFUSED_AVX2 0
#endif

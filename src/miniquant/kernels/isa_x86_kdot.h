// The K families' `+a8` blocks on AVX-512 VNNI (kernels/kquant_dynamic.cpp; the AVX2 ones are isa_x86_kfused_avx2.h):
// the fused blocks per family, and the 16-row tile for many tokens. Per super-block of one row against one token's
// int8 activations, they compute
//   acc += sum over the block's 64 four-byte lanes l of Dl(l) * sum_{i<4} q[4 l + i] a[4 l + i]
// with q the block's unsigned codes (< 64) and Dl(l) the step D of the sub-block lane l lies in (4 l / Sub).
// The four-byte integer sums are exact (|sum| <= 4 * 63 * 127); each is converted and scaled in float, so every
// ISA computes the portable twin's lane values (KDotPortable), only the order of the float additions differs. Here the
// integer sums are vpdpbusd's, u8 x s8 -> s32, one instruction per 64 bytes.
// For many tokens (VNNI), KTile puts 16 rows in the lanes instead and scales once per sub-block (its comment).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "miniquant/kernels/isa_x86_kfused_avx2.h"  // the scale-byte helpers both widths share
#include "miniquant/kquant/blocks.h"
#include "miniquant/kquant/superblock.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#define MQ_KDOT_FUSED 1  // the fused blocks below are compiled (kquant_dynamic.cpp's run_fused_family)
#include <immintrin.h>
namespace mq::kdetail {
// The VNNI choice (kquant_dynamic.cpp's KDotFast8): a tag, as the fused blocks below serve every family there.
struct KDotVnni {
  static constexpr bool kAvailable = true;
  static constexpr const char* kName = "vnni";
};

// Vector k's low 32 bytes take bit chunk[k] of planes[l] and its high 32 bytes bit chunk[k] + apart, at bit `shift`:
// the planes beside planes >> apart, then one shift per vector (the mask drops what a 16-bit shift carries in from the
// neighbouring byte).
inline void or_plane_bits(const uint8_t* planes, int shift, int apart, const int (&chunk)[4], __m512i* q) {
  const __m256i p = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(planes));
  const __m512i p2 = _mm512_inserti64x4(_mm512_castsi256_si512(p), _mm256_srl_epi16(p, _mm_cvtsi32_si128(apart)), 1);
  const __m512i one = _mm512_set1_epi8(1);
  for (int k = 0; k < 4; ++k) {
    const __m512i bit = _mm512_and_si512(_mm512_srl_epi16(p2, _mm_cvtsi32_si128(chunk[k])), one);
    q[k] = _mm512_or_si512(q[k], _mm512_sll_epi16(bit, _mm_cvtsi32_si128(shift)));
  }
}

// One stored bit per code above its low bits, for the code vectors q (codes 64 k .. 64 k + 63): code 32 j + l gets
// bit j of planes[l] at bit `shift` (q3_k's hmask at 2, q5_k's qh at 4; kdecode::high_bits is the scalar form).
// Vector k needs bit 2 k in its low 32 bytes and bit 2 k + 1 in its high 32.
inline void or_high_bits(const uint8_t* planes, int shift, __m512i* q) {
  constexpr int kChunk[4] = {0, 2, 4, 6};
  or_plane_bits(planes, shift, 1, kChunk, q);
}
// The same for load_raw's code vectors (q4_k / q5_k: vector k holds codes 32 j + l for j = 0, 1, 4, 5 in its low 32
// bytes and j + 2 in its high 32).
inline void or_high_bits_raw(const uint8_t* planes, int shift, __m512i* q) {
  constexpr int kChunk[4] = {0, 1, 4, 5};
  or_plane_bits(planes, shift, 2, kChunk, q);
}

// A fused block's D-scaled lane sums for one token: q the block's four code vectors (codes 64 k .. 64 k + 63), d the
// D of each of their lanes, a the token's 256 codes. Two short chains joined at the end: one add per block on the
// caller's loop-carried path.
inline __m512 lane_sums(const __m512i* q, const __m512* d, const int8_t* a) {
  __m512 c[4];
  for (int k = 0; k < 4; ++k)
    c[k] = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), q[k], _mm512_loadu_si512(a + 64 * k)));
  return _mm512_add_ps(_mm512_fmadd_ps(c[1], d[1], _mm512_mul_ps(c[0], d[0])), _mm512_fmadd_ps(c[3], d[3], _mm512_mul_ps(c[2], d[2])));
}

// Fused blocks: a family's codes split from its bytes in registers and never stored, against 64 activations
// loaded as they lie; its steps decoded by vector operations and broadcast per lane once per block and row, not
// per token. The same lane values as KDotPortable (exact four-byte sums, each times its D in float; the C_b asum_b
// terms as the decoders' C_b = D_b zero + M_b); only the order of the float additions differs. Each has
// kNsub, Acc, zero, Block, load(block bytes), token(block, a, asum, acc), sum(acc); run_fused drives them.
//
// q4_k and q5_k (kHigh): the 128 code bytes hold four chunks of 32 bytes, chunk c's low nibbles codes 64 c ..
// 64 c + 31 and its high nibbles the next 32 (kbits::unpack_halves): one 64-byte load, a mask and a shift give two
// chunks' halves, and a 128-bit lane shuffle puts each chunk's 64 codes in code order. q5_k's fifth bit of code
// 32 j + l is bit j of qh[l] (or_high_bits). Lanes 0-7 of code vector k are sub-block 2 k, lanes 8-15 sub-block 2 k + 1.
template <bool kHigh>
struct Q45KVnni {
  static constexpr int kNsub = 8;
  static constexpr int kLanes = 16;  // 32-bit lanes per vector: permute_lanes' width
  using Blk = std::conditional_t<kHigh, kblocks::BlockQ5K, kblocks::BlockQ4K>;
  struct Acc {
    __m512 v;    // a token's D-scaled lane sums over the row
    __m256 off;  // its C_b asum_b terms over the row, per sub-block position
  };
  static Acc zero() { return {_mm512_setzero_ps(), _mm256_setzero_ps()}; }
  struct Block {
    __m512i q[4];  // (4, 64) codes 64 k .. 64 k + 63
    __m512 d[4];   // (4, 16) D of each lane
    __m256 m;      // (8) C_b = M_b (zero 0) of the eight sub-blocks
    __m256 dsub;   // (8) D_b of the eight sub-blocks (the tile path's; dead, and dropped, in the per-row loop)
  };
  // The eight 6-bit scales and mins of the 12 scale bytes by 32-bit masks and shifts in one vector
  // (avx2::scales_mins6_bytes), then D = d sc and M = dmin m in one multiply: the same float products as
  // kdecode::scales_mins6. (The scalar unpack and two multiplies it replaced made q4_k's block the slowest to load:
  // bench/HISTORY.md, 2026-11-30.)
  static void steps(const uint8_t* blk, __m256& D, __m256& M) {
    static_assert(offsetof(Blk, dmin) == offsetof(Blk, d) + 2 && offsetof(Blk, scales) + 16 <= sizeof(Blk),
                  "d and dmin side by side; a 16-byte load at the scales stays in the block");
    uint32_t dd;
    std::memcpy(&dd, blk + offsetof(Blk, d), 4);
    const __m128 df = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(dd)));  // d, dmin
    const __m512 dm = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                                            _mm512_castps128_ps512(df));
    const __m128i sm = avx2::scales_mins6_bytes(blk + offsetof(Blk, scales));  // bytes 0-7 sc, 8-15 m
    const __m512 DM = _mm512_mul_ps(dm, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sm)));
    D = _mm512_castps512_ps256(DM);
    M = _mm512_extractf32x8_ps(DM, 1);
  }
  static void load(const uint8_t* blk, Block& b) {
    const __m512i nib = _mm512_set1_epi8(0x0F);
    const uint8_t* qs = blk + offsetof(Blk, qs);
    for (int h = 0; h < 2; ++h) {
      const __m512i x = _mm512_loadu_si512(qs + 64 * h);
      const __m512i lo = _mm512_and_si512(x, nib), hi = _mm512_and_si512(_mm512_srli_epi16(x, 4), nib);
      b.q[2 * h] = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(1, 0, 1, 0));
      b.q[2 * h + 1] = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(3, 2, 3, 2));
    }
    if constexpr (kHigh) or_high_bits(blk + offsetof(Blk, qh), 4, b.q);
    constexpr int kSub[4] = {0, 2, 4, 6};
    lane_steps(blk, kSub, 1, b);  // lanes 0-7: D[2 k], lanes 8-15: D[2 k + 1]
  }
  // The block's steps, and each code vector's lane steps: lanes 0-7 of d[k] D[sub[k]], lanes 8-15 D[sub[k] + next].
  static void lane_steps(const uint8_t* blk, const int (&sub)[4], int next, Block& b) {
    __m256 D;
    steps(blk, D, b.m);
    b.dsub = D;
    const __m512 D16 = _mm512_castps256_ps512(D);
    const __m512i half = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, next, next, next, next, next, next, next, next);
    for (int k = 0; k < 4; ++k) b.d[k] = _mm512_permutexvar_ps(_mm512_add_epi32(_mm512_set1_epi32(sub[k]), half), D16);
  }
  // The per-row paths' load (kquant_dynamic.cpp's run_fused, `+a8`; kquant.cpp's fused_float_rows, weight-only): the
  // two 64-byte halves' nibbles as they lie, without load's four lane shuffles (about a tenth of the block's
  // instructions at one token, all on the port the steps' permutes use too; 1.11x-1.22x faster on the AMX Xeon,
  // bench/HISTORY.md 2026-12-02). Code vector k then holds sub-blocks kRawSub[k] (lanes 0-7) and kRawSub[k] + 2
  // (lanes 8-15), codes 32 kRawSub[k] .. + 31 and 32 (kRawSub[k] + 2) .. + 31, and the token's activations come in
  // that order (raw_order). The lane values are load's, so the results are the same up to the order of the float additions.
  static constexpr bool kHasRaw = true;
  static constexpr int kRawSub[4] = {0, 1, 4, 5};
  static void load_raw(const uint8_t* blk, Block& b) {
    const __m512i nib = _mm512_set1_epi8(0x0F);
    const uint8_t* qs = blk + offsetof(Blk, qs);
    for (int h = 0; h < 2; ++h) {
      const __m512i x = _mm512_loadu_si512(qs + 64 * h);
      b.q[2 * h] = _mm512_and_si512(x, nib);
      b.q[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(x, 4), nib);
    }
    if constexpr (kHigh) or_high_bits_raw(blk + offsetof(Blk, qh), 4, b.q);
    lane_steps(blk, kRawSub, 2, b);  // lanes 0-7: D[kRawSub[k]], lanes 8-15: D[kRawSub[k] + 2]
  }
  // A token's 256 values (int8 codes, or floats for the weight-only step) in load_raw's order: the 32-value chunks of
  // each 128 as 0, 2, 1, 3. a, out: (256).
  template <class T>
  static void raw_order(const T* a, T* out) {
    constexpr int kFrom[8] = {0, 2, 1, 3, 4, 6, 5, 7};
    for (int c = 0; c < 8; ++c) std::memcpy(out + 32 * c, a + 32 * kFrom[c], 32 * sizeof(T));
  }
  // a: (256) the token's codes for this block;  asum: (8) their sums per sub-block.
  static void token(const Block& b, const int8_t* a, const float* asum, Acc& acc) {
    acc.v = _mm512_add_ps(acc.v, lane_sums(b.q, b.d, a));
    offsets(b, asum, acc);
  }
  // The C_b terms against sums per sub-block (8): of the codes here, of x in the float step (kquant_fused.h).
  static void offsets(const Block& b, const float* sums, Acc& acc) { acc.off = _mm256_fmadd_ps(b.m, _mm256_loadu_ps(sums), acc.off); }
  // The sub-blocks' D_b and C_b in lanes 0-7 (KTile's decode; lanes 8-15 zero).
  static void steps_of(const Block& b, __m512& D, __m512& C) {
    D = _mm512_castps256_ps512(b.dsub);
    D = _mm512_insertf32x8(D, _mm256_setzero_ps(), 1);
    C = _mm512_insertf32x8(_mm512_castps256_ps512(b.m), _mm256_setzero_ps(), 1);
  }
  // The row's dot: the lane sums less the C_b terms.
  static float sum(const Acc& acc) {
    const __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc.off), _mm256_extractf128_ps(acc.off, 1));
    const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
    return _mm512_reduce_add_ps(acc.v) - _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
  }
};
using Q4KVnni = Q45KVnni<false>;
using Q5KVnni = Q45KVnni<true>;

// The families with 16 sub-blocks of 16 (q2_k, q3_k, q6_k): lane l of code vector k (codes 64 k .. 64 k + 63) is
// sub-block 4 k + l / 4. What their token step, sum and per-lane steps share.
struct Sub16Vnni {
  static constexpr int kNsub = 16;
  static constexpr int kLanes = 16;
  struct Acc {
    __m512 v;    // a token's D-scaled lane sums over the row
    __m512 off;  // its C_b asum_b terms over the row, per sub-block
  };
  static Acc zero() { return {_mm512_setzero_ps(), _mm512_setzero_ps()}; }
  struct Block {
    __m512i q[4];  // (4, 64) codes 64 k .. 64 k + 63
    __m512 d[4];   // (4, 16) D of each lane
    __m512 c;      // (16) C_b = D_b zero + M_b
    __m512 dsub;   // (16) D_b (the tile path's; dead, and dropped, in the per-row loop)
  };
  // D: (16) the sub-blocks' steps, M: their mins; as the decoders, C_b = D_b zero + M_b in float.
  static void set_steps(__m512 D, __m512 M, float zero, Block& b) {
    for (int k = 0; k < 4; ++k)
      b.d[k] = _mm512_permutexvar_ps(
          _mm512_add_epi32(_mm512_set1_epi32(4 * k), _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3)), D);
    b.c = _mm512_add_ps(_mm512_mul_ps(D, _mm512_set1_ps(zero)), M);
    b.dsub = D;
  }
  // The sub-blocks' D_b and C_b (KTile's decode).
  static void steps_of(const Block& b, __m512& D, __m512& C) {
    D = b.dsub;
    C = b.c;
  }
  // a: (256) the token's codes for this block;  asum: (16) their sums per sub-block.
  static void token(const Block& b, const int8_t* a, const float* asum, Acc& acc) {
    acc.v = _mm512_add_ps(acc.v, lane_sums(b.q, b.d, a));
    offsets(b, asum, acc);
  }
  // The C_b terms against sums per sub-block (16): of the codes here, of x in the float step (kquant_fused.h).
  static void offsets(const Block& b, const float* sums, Acc& acc) { acc.off = _mm512_fmadd_ps(b.c, _mm512_loadu_ps(sums), acc.off); }
  static float sum(const Acc& acc) { return _mm512_reduce_add_ps(acc.v) - _mm512_reduce_add_ps(acc.off); }
  static float f16(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
  }
};

// q2_k and q3_k (kHigh): 64 bytes of two-bit fields, weight 128 h + 32 j + l in bits 2 j, 2 j + 1 of qs[32 h + l]:
// one load and a shift per j give codes 32 j + l beside 128 + 32 j + l, and 128-bit lane shuffles put them in code
// order. q3_k's third bit of weight 32 j + l is bit j of hmask[l], as q5_k's fifth.
template <bool kHigh>
struct Q23KVnni : Sub16Vnni {
  using Blk = std::conditional_t<kHigh, kblocks::BlockQ3K, kblocks::BlockQ2K>;
  static void load(const uint8_t* blk, Block& b) {
    const __m512i x = _mm512_loadu_si512(blk + offsetof(Blk, qs)), three = _mm512_set1_epi8(3);
    __m512i v[4];  // v[j]: codes 32 j .. 32 j + 31 (low 32 bytes) and 128 + 32 j .. (high 32 bytes)
    for (int j = 0; j < 4; ++j) v[j] = _mm512_and_si512(_mm512_srl_epi16(x, _mm_cvtsi32_si128(2 * j)), three);
    b.q[0] = _mm512_shuffle_i64x2(v[0], v[1], _MM_SHUFFLE(1, 0, 1, 0));
    b.q[1] = _mm512_shuffle_i64x2(v[2], v[3], _MM_SHUFFLE(1, 0, 1, 0));
    b.q[2] = _mm512_shuffle_i64x2(v[0], v[1], _MM_SHUFFLE(3, 2, 3, 2));
    b.q[3] = _mm512_shuffle_i64x2(v[2], v[3], _MM_SHUFFLE(3, 2, 3, 2));
    const float d = f16(blk + offsetof(Blk, d));
    if constexpr (kHigh) {
      or_high_bits(blk + offsetof(Blk, hmask), 2, b.q);
      // The sixteen 6-bit scales (sc + 32) of the 12 bytes by 32-bit masks and shifts in one vector.
      const __m128i sc = avx2::q3k_scale_bytes(blk);
      const __m512i sci = _mm512_sub_epi32(_mm512_cvtepu8_epi32(sc), _mm512_set1_epi32(32));
      set_steps(_mm512_mul_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sci)), _mm512_setzero_ps(), 4.0f, b);
    } else {
      const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(Blk, scales))));
      const __m512 D = _mm512_mul_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(_mm512_and_si512(sc, _mm512_set1_epi32(15))));
      const __m512 M = _mm512_mul_ps(_mm512_set1_ps(f16(blk + offsetof(Blk, dmin))), _mm512_cvtepi32_ps(_mm512_srli_epi32(sc, 4)));
      set_steps(D, M, 0.0f, b);
    }
  }
};
using Q2KVnni = Q23KVnni<false>;
using Q3KVnni = Q23KVnni<true>;

// q6_k: per half h, 64 bytes of ql and 32 of qh make codes 128 h .. 128 h + 127: ql's low nibbles are codes
// 128 h + l (l < 64) and its high nibbles 128 h + 64 + l, already in code order; the two high bits of code
// 128 h + 32 i + l (i < 4, l < 32) are bits 2 i, 2 i + 1 of qh[l]. Zero 32.
struct Q6KVnni : Sub16Vnni {
  using Blk = kblocks::BlockQ6K;
  static void load(const uint8_t* blk, Block& b) {
    const __m512i nib = _mm512_set1_epi8(0x0F), three = _mm512_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
      const __m512i x = _mm512_loadu_si512(blk + offsetof(Blk, ql) + 64 * h);
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + offsetof(Blk, qh) + 32 * h));
      // Low 32 bytes: bits 0-1 (codes 128 h + l), high 32: bits 2-3 (codes 128 h + 32 + l); shifted by 4 more
      // for the high nibbles' codes. The masks drop what 16-bit shifts carry in from the neighbouring byte.
      const __m512i qh2 = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
      const __m512i h_lo = _mm512_slli_epi16(_mm512_and_si512(qh2, three), 4);
      const __m512i h_hi = _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh2, 4), three), 4);
      b.q[2 * h] = _mm512_or_si512(_mm512_and_si512(x, nib), h_lo);
      b.q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(x, 4), nib), h_hi);
    }
    // D_b = d sc_b with sc_b signed bytes: the decoder's float product.
    const __m512 D = _mm512_mul_ps(_mm512_set1_ps(f16(blk + offsetof(Blk, d))),
        _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(Blk, scales))))));
    set_steps(D, _mm512_setzero_ps(), 32.0f, b);
  }
};

// 16 x 16 transpose of 32-bit lanes: r[i] lane l becomes r[l] lane i.
inline void transpose16(__m512i* r) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 16; i += 8)
    for (int j = 0; j < 4; ++j) {
      t[i + j] = _mm512_shuffle_i32x4(r[i + j], r[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_shuffle_i32x4(r[i + j], r[i + j + 4], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0xdd);
  }
}

// The many-token `+a8` tile (kquant_dynamic.cpp's run_tiled): 16 rows in the 16 lanes, as the int families' blocks
// (dynamic.cpp), so that a sub-block's step D_b and offset C_b are one vector per 16 rows and the token's scaling is
// paid once per sub-block, not once per four-byte lane as in the per-row fused blocks (there every lane mixes
// columns, here every lane is a row). decode() splits 16 rows' super-block with the family's fused load and
// transposes the codes and steps into lanes; run() then takes kT tokens at a time: per sub-block its four-byte steps
// each feed kT vpdpbusd (the token's four codes broadcast), one int -> float conversion and an FMA by D_b, and an
// FMA of C_b with the token's code sum, on kT float chains. Lane values: the exact integer sub-block sums
// sum_{j in b} q_j a_j, times D_b, less C_b sum_{j in b} a_j (the portable twin's algebra, the rounding order differs:
// two roundings per sub-block and row, cols / Sub x 2 along a row, inside test_kernels' gamma(cols + cols / 16 + 16)).
template <class Fused>
struct KTile {
  static constexpr int kNsub = Fused::kNsub;
  static constexpr int kSteps = kSuperBlock / kNsub / 4;  // four-column steps per sub-block
  static constexpr int kT = 8;                             // tokens per pass: 2 kT accumulators in registers
  // row0: the first row's super-block; row_bytes apart. codes: (64, 16) step s, lane r: codes 4 s .. 4 s + 3 of row
  // r;  D, C: (kNsub, 16) the sub-blocks' steps and offsets, lane r for row r.
  static void decode(const uint8_t* row0, int64_t row_bytes, __m512i* codes, __m512* D, __m512* C) {
    alignas(64) __m512i q[4][16];  // (4, 16 rows, 64 codes) the rows' code vectors
    __m512i d[16], c[16];          // (16 rows, 16) their D_b and C_b
    for (int r = 0; r < 16; ++r) {
      typename Fused::Block b;
      Fused::load(row0 + r * row_bytes, b);
      for (int k = 0; k < 4; ++k) q[k][r] = b.q[k];
      __m512 dr, cr;
      Fused::steps_of(b, dr, cr);
      d[r] = _mm512_castps_si512(dr);
      c[r] = _mm512_castps_si512(cr);
    }
    for (int k = 0; k < 4; ++k) {  // code vector k, lane l: codes 64 k + 4 l ..: step 16 k + l
      transpose16(q[k]);
      for (int l = 0; l < 16; ++l) codes[16 * k + l] = q[k][l];
    }
    transpose16(d);
    transpose16(c);
    for (int j = 0; j < kNsub; ++j) {
      D[j] = _mm512_castsi512_ps(d[j]);
      C[j] = _mm512_castsi512_ps(c[j]);
    }
  }
  // codes, D, C: nsub sub-blocks of decode()'s output, back to back;  a: kT tokens' codes, token t at a + t * a_stride;
  // asum: their sums per sub-block, token t at asum + t * s_stride;  out: (kT, 16) the 16 rows' dots per token.
  static void run(const __m512i* codes, const __m512* D, const __m512* C, int64_t nsub, const int8_t* a,
                  int64_t a_stride, const float* asum, int64_t s_stride, __m512* out) {
    __m512 acc[kT];
    for (int t = 0; t < kT; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t j = 0; j < nsub; ++j) {
      __m512i is[kT];
      for (int t = 0; t < kT; ++t) is[t] = _mm512_setzero_si512();
      for (int s = 0; s < kSteps; ++s) {
        const __m512i v = _mm512_load_si512(codes + j * kSteps + s);
        const int8_t* col = a + 4 * (j * kSteps + s);
        for (int t = 0; t < kT; ++t) {
          int32_t w4;
          std::memcpy(&w4, col + t * a_stride, 4);
          is[t] = _mm512_dpbusd_epi32(is[t], v, _mm512_set1_epi32(w4));
        }
      }
      for (int t = 0; t < kT; ++t) {
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[t]), D[j], acc[t]);
        acc[t] = _mm512_fnmadd_ps(C[j], _mm512_set1_ps(asum[t * s_stride + j]), acc[t]);
      }
    }
    for (int t = 0; t < kT; ++t) out[t] = acc[t];
  }
};
}  // namespace mq::kdetail
#else
#define MQ_KDOT_FUSED 0
namespace mq::kdetail {
struct KDotVnni {
  static constexpr bool kAvailable = false;
};
}  // namespace mq::kdetail
#endif

// The AVX2 choice (kquant_dynamic.cpp's KDotFast8): a tag, as isa_x86_kfused_avx2.h's fused blocks serve every
// family there.
namespace mq::kdetail {
struct KDotAvx2 {
  static constexpr bool kAvailable = MQ_KFUSED_AVX2;
  static constexpr const char* kName = "avx2";
};
}  // namespace mq::kdetail

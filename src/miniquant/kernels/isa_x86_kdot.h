// The K families' `+a8` block dot (kernels/kquant_dynamic.cpp), the one other file with x86 intrinsics beside
// isa_x86.h (which is at its ~600-line mark). One super-block of one row against one token's int8 activations:
//   acc += sum over the block's 64 four-byte lanes l of Dl(l) * sum_{i<4} q[4 l + i] a[4 l + i]
// with q the block's unsigned codes (< 64) and Dl(l) the step D of the sub-block lane l lies in (4 l / Sub).
// The four-byte integer sums are exact (|sum| <= 4 * 63 * 127); each is converted and scaled in float, so every
// ISA computes the portable twin's lane values (KDotPortable), only the order of the float additions differs.
//   VNNI (AVX-512): vpdpbusd, u8 x s8 -> s32, one instruction per 64 bytes.
//   AVX2: vpmaddubsw (adjacent u8 x s8 products summed into int16: |q0 a0 + q1 a1| <= 2 * 63 * 127 = 16002,
//         never saturating) then vpmaddwd against ones, per 32 bytes.
// Each keeps four independent float chains (one per 64-byte step) so that a block's multiply-adds overlap.
#pragma once
#include <cstdint>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#include <immintrin.h>
namespace mq::kdetail {
struct KDotVnni {
  static constexpr bool kAvailable = true;
  static constexpr const char* kName = "vnni";
  struct Acc {
    __m512 v[4];
  };
  static Acc zero() { return {{_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()}}; }
  // The decoders store their codes 32 bytes at a time (the compiler's 256-bit vectors): a 64-byte load across
  // two such stores cannot be forwarded from them and waits for both to reach the cache; two 32-byte loads can.
  static __m512i load_halves(const uint8_t* p) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32)), 1);
  }
  // q: (256) codes;  a: (256) activations;  D: (256 / Sub) sub-block steps.
  template <int Sub>
  static void block(Acc& acc, const uint8_t* q, const int8_t* a, const float* D) {
    // Lane l of step s lies in sub-block (16 s + l) / (Sub / 4): its D by one vpermps from the D vector.
    const __m512 dv = _mm512_loadu_ps(D);  // D has kMaxSubBlocks (16) floats: whole for both sub-block sizes
    for (int s = 0; s < 4; ++s) {
      const __m512i idx = _mm512_srli_epi32(
          _mm512_add_epi32(_mm512_set1_epi32(16 * s), _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)),
          Sub == 16 ? 2 : 3);
      const __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), load_halves(q + 64 * s), _mm512_loadu_si512(a + 64 * s));
      acc.v[s] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_permutexvar_ps(idx, dv), acc.v[s]);
    }
  }
  static float sum(const Acc& acc) {
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc.v[0], acc.v[1]), _mm512_add_ps(acc.v[2], acc.v[3])));
  }
};
}  // namespace mq::kdetail
#else
namespace mq::kdetail {
struct KDotVnni {
  static constexpr bool kAvailable = false;
};
}  // namespace mq::kdetail
#endif

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
namespace mq::kdetail {
struct KDotAvx2 {
  static constexpr bool kAvailable = true;
  static constexpr const char* kName = "avx2";
  struct Acc {
    __m256 v[4];
  };
  static Acc zero() { return {{_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()}}; }
  template <int Sub>
  static void block(Acc& acc, const uint8_t* q, const int8_t* a, const float* D) {
    const __m256i ones = _mm256_set1_epi16(1);
    for (int s = 0; s < 8; ++s) {  // 32 bytes, 8 lanes: lanes 8 s .. 8 s + 7, all in sub-block 8 s / (Sub / 4) ...
      const __m256i p = _mm256_maddubs_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * s)),
                                             _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 32 * s)));
      const __m256 d = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));
      // ... for Sub 32; for Sub 16 lanes 0-3 and 4-7 are sub-blocks 2 s and 2 s + 1.
      const __m256 dl = Sub == 32 ? _mm256_set1_ps(D[s])
                                  : _mm256_setr_m128(_mm_set1_ps(D[2 * s]), _mm_set1_ps(D[2 * s + 1]));
      acc.v[s & 3] = _mm256_fmadd_ps(d, dl, acc.v[s & 3]);
    }
  }
  static float sum(const Acc& acc) {
    const __m256 t = _mm256_add_ps(_mm256_add_ps(acc.v[0], acc.v[1]), _mm256_add_ps(acc.v[2], acc.v[3]));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
  }
};
}  // namespace mq::kdetail
#else
namespace mq::kdetail {
struct KDotAvx2 {
  static constexpr bool kAvailable = false;
};
}  // namespace mq::kdetail
#endif

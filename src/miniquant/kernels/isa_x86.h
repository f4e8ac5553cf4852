// The one file with x86 intrinsics, chosen at compile time: the VNNI (vpdpbusd, u8 x s8 -> s32)
// building blocks of the dynamic-activation kernels, and the F16C fp16 -> fp32 widening of the fp16
// weight-only kernel. Without the ISA, the markers say so and the portable twins run (they are
// always built and tested: KernelOptions::use_isa = false).
#pragma once
#include <cstdint>

#include <xsimd/xsimd.hpp>

#if defined(__AVX512F__)
#include <immintrin.h>
namespace mq::kdetail {
// fp16 weights, 32 per 512-bit load: field 0 = values 0..15, field 1 = values 16..31 (contiguous,
// so x needs no permutation). One vcvtph2ps per 16 weights instead of the portable bit trick.
struct DecF16Wide {
  static constexpr bool kAvailable = xsimd::batch<float>::size == 16;
  static constexpr int F = 2;
  static constexpr bool kScaled = false;
  static constexpr bool kContiguous = true;
  template <int K>
  static xsimd::batch<float> field(const xsimd::batch<uint32_t>& w) {
    const __m512i v = w;
    if constexpr (K == 0) return xsimd::batch<float>(_mm512_cvtph_ps(_mm512_castsi512_si256(v)));
    else return xsimd::batch<float>(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(v, 1)));
  }
};

// int4 fields, 8 per 32-bit lane as DecInt<4> lays them out, turned into floats by a 16-entry
// in-register table (vpermps reads only the low 4 bits of each index, so no mask and no int->float
// convert): shift + permute instead of shift + and + convert per 16 weights.
struct DecInt4Perm {
  static constexpr bool kAvailable = xsimd::batch<float>::size == 16;
  static constexpr int F = 8;
  static constexpr bool kScaled = true;
  static constexpr bool kContiguous = false;
  template <int K>
  static xsimd::batch<float> field(const xsimd::batch<uint32_t>& w) {
    const __m512 table = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512i v = w;
    if constexpr (K > 0) v = _mm512_srli_epi32(v, 4 * K);
    return xsimd::batch<float>(_mm512_permutexvar_ps(v, table));
  }
};
}  // namespace mq::kdetail
#else
namespace mq::kdetail {
struct DecF16Wide {
  static constexpr bool kAvailable = false;
};
struct DecInt4Perm {
  static constexpr bool kAvailable = false;
};
}  // namespace mq::kdetail
#endif

#if defined(__AVX512VNNI__) && defined(__AVX512VL__) && defined(__AVX512F__)
#include <immintrin.h>

namespace mq::kdetail {

// 32-byte chunks: 8 int32 lanes, lane l sums the products of bytes 4l..4l+3.
struct VnniIsa {
  static constexpr bool kAvailable = true;
  using U = __m256i;   // 32 unsigned weight bytes
  using I = __m256i;   // 8 x int32 partial dots
  using Fv = __m256;   // 8 x float accumulators
  static I izero() { return _mm256_setzero_si256(); }
  static Fv fzero() { return _mm256_setzero_ps(); }
  static U load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  // 32 bytes of int4 fields: low nibbles (elements 2j) and high nibbles (elements 2j+1) as bytes.
  static void nibbles(const uint8_t* p, U& lo, U& hi) {
    const __m256i w = load(p), m = _mm256_set1_epi8(0x0F);
    lo = _mm256_and_si256(w, m);
    hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m);
  }
  // acc += u . a per lane (vpdpbusd). Keep callers' accumulators in registers: see dynamic.cpp.
  static void dot(I& acc, const U& u, const int8_t* a) {
    acc = _mm256_dpbusd_epi32(acc, u, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)));
  }
  static void flush(Fv& f, const I& acc, float s) { f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(s), f); }
  // Lanes 0-3 belong to one group (scale s0), lanes 4-7 to the next (s1).
  static void flush2(Fv& f, const I& acc, float s0, float s1) {
    const __m256 sv = _mm256_insertf128_ps(_mm256_set1_ps(s0), _mm_set1_ps(s1), 1);
    f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), sv, f);
  }
  static float hsum(const Fv& f) {
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(f), _mm256_extractf128_ps(f, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
  }
};

}  // namespace mq::kdetail

#else

namespace mq::kdetail {
struct VnniIsa {
  static constexpr bool kAvailable = false;
};
}  // namespace mq::kdetail

#endif

// The one file with x86 intrinsics, chosen at compile time: the VNNI (vpdpbusd, u8 x s8 -> s32)
// building blocks of the dynamic-activation kernels (16-row blocks, blocked.h), their AVX2 form for CPUs
// without AVX-512 VNNI (vpmaddubsw + vpmaddwd), the AVX-512 BF16 table decode and bf16 dot of the
// weight-only int4 / int3 / int2 kernels (int3's pieces spread by VBMI vpermi2b), the shared lane sums of the
// weight-only tiles' outputs, the byte-shuffle int8 field decode of the weight-only int8 kernel, the F16C
// fp16 -> fp32 widening of the fp16 weight-only kernel and of group scales, the K kernel's byte-code widening, and the AVX2 byte shuffle (AVX-512: VBMI vpermb) that spreads int3 weight bytes over 32-bit lanes.
// Without the ISA, the markers say so and the portable twins run (they are always built and tested:
// KernelOptions::use_isa = false).
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>

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

// Lane sums of 4 or 8 vectors at once (out[i] = sum of v[i]'s 16 lanes), for the tiles' outputs: a tree of
// 128-bit-quarter shuffles and adds shared by the vectors, 4 or 3 instructions per output where one
// reduction per vector takes 7. On MiniGPT's 256-wide rows a bf16 tile's outputs each come from only 16 dot
// instructions, and the per-vector reductions were about a quarter of its samples (perf, int4-g64 prefill).
struct LaneSums {
  static constexpr bool kAvailable = xsimd::batch<float>::size == 16;
  // Quarter i of the result holds 4 partial lanes of v[i], i < 4.
  [[gnu::always_inline]] static __m512 quarters(const __m512* v) {
    const __m512 r01 = _mm512_add_ps(_mm512_shuffle_f32x4(v[0], v[1], 0x44), _mm512_shuffle_f32x4(v[0], v[1], 0xEE));
    const __m512 r23 = _mm512_add_ps(_mm512_shuffle_f32x4(v[2], v[3], 0x44), _mm512_shuffle_f32x4(v[2], v[3], 0xEE));
    return _mm512_add_ps(_mm512_shuffle_f32x4(r01, r23, 0x88), _mm512_shuffle_f32x4(r01, r23, 0xDD));
  }
  template <int N>
  [[gnu::always_inline]] static void sums(const xsimd::batch<float>* b, float* out) {
    static_assert(N == 4 || N == 8);
    __m512 v[N];
#pragma GCC unroll 8
    for (int i = 0; i < N; ++i) v[i] = b[i];
    if constexpr (N == 4) {
      __m512 q = quarters(v);
      q = _mm512_add_ps(q, _mm512_permute_ps(q, 0x4E));  // lanes 2, 3, 0, 1 of each quarter
      q = _mm512_add_ps(q, _mm512_permute_ps(q, 0xB1));  // lanes 1, 0, 3, 2: lane 4i = sum of v[i]
      const __m512 o = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), q);
      _mm_storeu_ps(out, _mm512_castps512_ps128(o));
    } else {
      const __m512 a = quarters(v), b = quarters(v + 4);
      // Per quarter i: lanes a0+a2, b0+b2, a1+a3, b1+b3, then the halves swapped and added: lane 4i = sum of
      // v[i], lane 4i + 1 = sum of v[4 + i].
      __m512 t = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
      t = _mm512_add_ps(t, _mm512_permute_ps(t, 0x4E));
      const __m512 o = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0), t);
      _mm256_storeu_ps(out, _mm512_castps512_ps256(o));
    }
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

// 16 one-byte codes as floats, straight from memory: vpmovzxbd + vcvtdq2ps (the K kernel's single-token path,
// which then needs no float copy of a block's codes).
struct CodesF32 {
  static constexpr bool kAvailable = xsimd::batch<float>::size == 16;
  static xsimd::batch<float> load(const uint8_t* p) {
    return xsimd::batch<float>(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))));
  }
};
}  // namespace mq::kdetail
#else
namespace mq::kdetail {
struct DecF16Wide {
  static constexpr bool kAvailable = false;
};
struct CodesF32 {
  static constexpr bool kAvailable = false;
  static xsimd::batch<float> load(const uint8_t* p);  // declared only: named in discarded branches
};
struct DecInt4Perm {
  static constexpr bool kAvailable = false;
};
struct LaneSums {
  static constexpr bool kAvailable = false;
  // Declared only: named in a discarded `if constexpr` branch (word_kernel.h lane_sums), never called or defined.
  template <int N>
  static void sums(const xsimd::batch<float>* b, float* out);
};
}  // namespace mq::kdetail
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__)
#include <immintrin.h>
namespace mq::kdetail {
// int8 fields, 4 per 32-bit lane as DecInt<8> lays them out: field K of every lane is byte K of the lane,
// zero-extended by one in-lane vpshufb (bytes K, then three zeros) and converted, 3 instructions per 16
// weights with the FMA where DecInt<8>'s shift + and + convert + FMA take 4.
struct DecInt8Wide {
  static constexpr bool kAvailable = xsimd::batch<float>::size == 16;
  static constexpr int F = 4;
  static constexpr bool kScaled = true;
  static constexpr bool kContiguous = false;
  template <int K>
  static xsimd::batch<float> field(const xsimd::batch<uint32_t>& w) {
    const __m512i pick = _mm512_set1_epi32(static_cast<int>(0x80808000u | K));  // byte K of the lane, zeros above
    // vpshufb indexes within each 128-bit quarter: lane j's bytes are 4 (j mod 4) + 0..3 of its quarter.
    const __m512i idx = _mm512_add_epi32(pick, _mm512_setr_epi32(0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12));
    return xsimd::batch<float>(_mm512_cvtepi32_ps(_mm512_shuffle_epi8(w, idx)));
  }
};
}  // namespace mq::kdetail
#else
namespace mq::kdetail {
struct DecInt8Wide {  // vpshufb on 512 bits needs AVX-512 BW
  static constexpr bool kAvailable = false;
};
}  // namespace mq::kdetail
#endif

#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
#include <immintrin.h>
namespace mq::kdetail {
// One int3 block step (blocked.h Int3Step, 96 bytes) as the two tables of a vpermi2b: bytes 0 .. 63 and 64 .. 95 (the
// second load masked to 32 bytes, so nothing past the step is read); spread() gathers bytes of both by an index
// table. The bf16 dots (Bf16Dot::step_reg) and the VNNI int3 decode (Vnni16::pieces3) both start here.
struct Int3StepBytes {
  __m512i lo, hi;
  static Int3StepBytes load(const uint8_t* p) { return {_mm512_loadu_si512(p), _mm512_maskz_loadu_epi8(0xFFFFFFFFull, p + 64)}; }
  __m512i spread(const uint8_t* ix) const { return _mm512_permutex2var_epi8(lo, _mm512_load_si512(ix), hi); }
};
}  // namespace mq::kdetail
#endif

#if defined(__AVX512BF16__) && defined(__AVX512BW__)
#include <immintrin.h>
namespace mq::kdetail {
// Weight-only int4 / int2 products on bf16 dot products (word_kernel.h DecIntBf16): one 512-bit register is
// 32 16-bit words of packed fields; field K of every word becomes a bf16 through a 32-entry word table
// (vpermw reads the low 5 bits of each word, so the table repeats every 2^Bits entries and the bits of the
// next field above need no mask), and vdpbf16ps multiplies 32 such weights by 32 bf16 activations into 16
// fp32 lanes (lane j: words 2j and 2j+1). Small integers (|v| <= 15) are exact in bf16 and every bf16 x bf16
// product is exact in fp32, so the only rounding is the fp32 accumulation, plus the activations' own
// bf16 representation (two bf16 per activation, word_kernel.h split_bf16).
struct Bf16Dot {
  static constexpr bool kAvailable = true;
  using W = __m512i;  // 32 words: packed fields, or 32 bf16 values
  using A = __m512;   // 16 fp32 lanes
  // Table entry i = bf16(i mod 2^Bits - Off): the field's value minus the symmetric zero-point (Off) or not
  // (0). Built at compile time: exact, since |v| < 2^8 needs at most 8 significant bits.
  template <int Bits, int Off>
  struct Table {
    alignas(64) uint16_t t[32];
    constexpr Table() : t{} {
      for (int i = 0; i < 32; ++i)
        t[i] = static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>((i & ((1 << Bits) - 1)) - Off)) >> 16);
    }
  };
  template <int Bits, int Off>
  static W table() {
    alignas(64) static constexpr Table<Bits, Off> tab{};
    return _mm512_load_si512(tab.t);
  }
  // hi / lo halves of x = hi + lo + e for 16 activations (split_bf16's rounding; vcvtneps2bf16 rounds to
  // nearest even and, unlike split_bf16, flushes denormals, which vdpbf16ps counts as zero anyway).
  static void split16(const float* x, uint16_t* hi, uint16_t* lo) {
    const __m512 v = _mm512_loadu_ps(x);
    const __m256bh h = _mm512_cvtneps_pbh(v);
    const __m512 hf = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)h), 16));
    const __m256bh l = _mm512_cvtneps_pbh(_mm512_sub_ps(v, hf));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi), (__m256i)h);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo), (__m256i)l);
  }
  // The field at bit S of every word as 32 bf16: the table's index is the word's bits S .. S+4, so its entries
  // repeat every 2^Bits and the bits above the field play no part.
  template <int S>
  static W shifted(const W& w, const W& tab) {
    if constexpr (S == 0) return _mm512_permutexvar_epi16(w, tab);
    else return _mm512_permutexvar_epi16(_mm512_srli_epi16(w, S), tab);
  }
  template <int Bits, int K>
  static W field(const W& w, const W& tab) {
    return shifted<Bits * K>(w, tab);
  }
  // A block of packed codes (word_kernel.h DecIntBf16): int4 / int2, one register of 32 words (64 bytes);
  // int3 (VBMI builds, kInt3), 96 bytes of the bit stream as 32 three-byte pieces of 8 fields each, spread by
  // vpermi2b over two registers: lo word i = bytes 3i, 3i+1 (fields 0-4 at bits 0, 3, .., 12), hi word i =
  // bytes 3i+1, 3i+2 (fields 5-7 at bits 7, 10, 13). Word i = piece i, so fp32 lane j sums pieces 2j and
  // 2j+1 (fields 16j .. 16j+15). Nothing past the block is read (the second load is masked to 32 bytes).
  template <bool Spread>  // the family's kSpread (int_families.h)
  struct Block {
    W w[Spread ? 2 : 1];
  };
#if defined(__AVX512VBMI__)
  static constexpr bool kInt3 = true;
  struct Int3Index {
    alignas(64) uint8_t lo[64], hi[64];
    constexpr Int3Index() : lo{}, hi{} {
      for (int i = 0; i < 32; ++i) {
        lo[2 * i] = static_cast<uint8_t>(3 * i), lo[2 * i + 1] = static_cast<uint8_t>(3 * i + 1);
        hi[2 * i] = static_cast<uint8_t>(3 * i + 1), hi[2 * i + 1] = static_cast<uint8_t>(3 * i + 2);
      }
    }
  };
#else
  static constexpr bool kInt3 = false;
#endif
  template <bool Spread>
  static Block<Spread> block(const uint8_t* p) {
    Block<Spread> b;
    if constexpr (Spread) {
#if defined(__AVX512VBMI__)
      alignas(64) static constexpr Int3Index ix{};
      const __m512i a = _mm512_loadu_si512(p), c = _mm512_maskz_loadu_epi8(0xFFFFFFFFull, p + 64);
      b.w[0] = _mm512_permutex2var_epi8(a, _mm512_load_si512(ix.lo), c);
      b.w[1] = _mm512_permutex2var_epi8(a, _mm512_load_si512(ix.hi), c);
#else
      static_assert(!Spread, "spread (int3) bf16 blocks need AVX-512 VBMI (kInt3)");
#endif
    } else {
      b.w[0] = _mm512_loadu_si512(p);
    }
    return b;
  }
  // Field K of every word of a block as 32 bf16 (int3: K = 0..7 of each piece, the others K = 0..16/Bits-1).
  template <int Bits, int K, bool Spread>
  static W field(const Block<Spread>& b, const W& tab) {
    if constexpr (Spread) {
      if constexpr (K == 0) return _mm512_permutexvar_epi16(b.w[0], tab);
      else if constexpr (K < 5) return _mm512_permutexvar_epi16(_mm512_srli_epi16(b.w[0], 3 * K), tab);
      else return _mm512_permutexvar_epi16(_mm512_srli_epi16(b.w[1], 3 * K - 8), tab);
    } else {
      return field<Bits, K>(b.w[0], tab);
    }
  }
  static W load(const uint16_t* p) { return _mm512_load_si512(p); }  // activations: 64-byte aligned
  static A zero() { return _mm512_setzero_ps(); }
  // acc + sum over the lane's two words of a * b (vdpbf16ps: bf16 inputs below 2^-126 count as zero).
  static A dot(const A& acc, const W& a, const W& b) { return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b); }
  static A add(const A& a, const A& b) { return _mm512_add_ps(a, b); }
  static A fma(const A& a, const A& b, const A& c) { return _mm512_fmadd_ps(a, b, c); }
  // The 16-row block layout (blocked.h, blocked_bf16.cpp): one k8 step of int4 codes, 16 rows x 4 bytes.
  static W codes(const uint8_t* p) { return _mm512_loadu_si512(p); }
  // Register Q of a block-layout step at p: int8 / int4 / int2, the 64 bytes at p + 64 Q. int3 (VBMI), a 96-byte
  // step of 16 lanes x two 3-byte pieces (blocked.h Int3Step) spread by vpermi2b into lane words of two 16-bit
  // halves, piece 0's in the low one and piece 1's in the high one: Q = 0 takes each piece's bytes 0, 1 (fields
  // 0 .. 4 at bits 0, 3, .., 12), Q = 1 its bytes 1, 2 (fields 5 .. 7 at bits 7, 10, 13). Nothing past the
  // step is read (the second load is masked to 32 bytes).
#if defined(__AVX512VBMI__)
  struct BlockInt3Index {
    alignas(64) uint8_t ix[2][64];
    constexpr BlockInt3Index() : ix{} {
      for (int l = 0; l < 16; ++l)
        for (int q = 0; q < 2; ++q) {
          ix[q][4 * l + 0] = static_cast<uint8_t>(6 * l + q), ix[q][4 * l + 1] = static_cast<uint8_t>(6 * l + q + 1);
          ix[q][4 * l + 2] = static_cast<uint8_t>(6 * l + 3 + q), ix[q][4 * l + 3] = static_cast<uint8_t>(6 * l + 4 + q);
        }
    }
  };
#endif
  // Spread: the family's steps are 3-byte pieces (the family's kSpread, int_families.h).
  template <bool Spread, int Q>
  static W step_reg(const uint8_t* p) {
    if constexpr (Spread) {
#if defined(__AVX512VBMI__)
      alignas(64) static constexpr BlockInt3Index kIx{};
      return Int3StepBytes::load(p).spread(kIx.ix[Q]);
#else
      static_assert(!Spread, "spread (int3) blocks need AVX-512 VBMI (kInt3)");
#endif
    } else {
      return _mm512_loadu_si512(p + 64 * Q);
    }
  }
  // One 32-bit word (two bf16 activations) in every lane: vdpbf16ps takes it as a broadcast memory operand.
  static W pair(const uint32_t* p) { return _mm512_set1_epi32(static_cast<int>(*p)); }
  // dot(acc, a, pair(p)) with the pair read by the instruction itself ({1to16} memory operand). Written out because
  // gcc 12 hoists the set1 of a loop-invariant pair into a register: in the one-token block tile int4's 4 and int3 /
  // int2's 8 pairs per step then compete with 16 partial sums and 8 outputs for 32 registers and spill.
  static A dot_pair(const A& acc, const W& a, const uint32_t* p) {
    A r = acc;
    __asm__("vdpbf16ps %2%{1to16%}, %1, %0" : "+v"(r) : "v"(a), "m"(*p));
    return r;
  }
  // Keeps w in a register: gcc 12 otherwise folds the load of a step's codes into each field's shift, one load
  // per field instead of one per step (with the pairs from memory too, the one-token tile became load-bound).
  static void keep(W& w) { __asm__("" : "+v"(w)); }
  // int8 block tiles dequantized once for many tokens (blocked_bf16.cpp dequant8): the 64 bytes at p (16 lanes x
  // bytes 0 .. 3) as two registers of 16-bit integers, even = (byte 0, byte 2) and odd = (byte 1, byte 3) of
  // every lane, and 32 such integers minus Off as bf16 (exact: |v - Off| <= 255 has at most 8 significant bits).
  static void byte_pairs(const uint8_t* p, W& even, W& odd) {
    const __m512i v = _mm512_loadu_si512(p);
    even = _mm512_and_si512(v, _mm512_set1_epi16(0x00FF));
    odd = _mm512_srli_epi16(v, 8);
  }
  template <int Off>
  static W ints_bf16(const W& v) {
    const __m512i d = Off != 0 ? _mm512_sub_epi16(v, _mm512_set1_epi16(Off)) : v;
    const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(d)));
    const __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(d, 1)));
    return (W)_mm512_cvtne2ps_pbh(hi, lo);  // words 0 .. 15 from lo, 16 .. 31 from hi
  }
  static void put(uint16_t* p, const W& v) { _mm512_store_si512(p, v); }  // 64-byte aligned
  // 16 rows' fp16 group scales, 16 rows' u8 zero-points, as fp32 lanes.
  static A scales16(const uint16_t* s) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s))); }
  static A zeros16(const uint8_t* z) {
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(z))));
  }
  static A set1(float v) { return _mm512_set1_ps(v); }
  static A mul(const A& a, const A& b) { return _mm512_mul_ps(a, b); }
  static void store(float* y, const A& v, int valid) { _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << valid) - 1u), v); }
};
}  // namespace mq::kdetail
#else
namespace mq::kdetail {
struct Bf16Dot {
  static constexpr bool kAvailable = false;
  static constexpr bool kInt3 = false;
};
}  // namespace mq::kdetail
#endif

namespace mq::kdetail {
// True when this build has family Fam's bf16 dot products (Fam: int_families.h): AVX-512 BF16, and VBMI for a
// family of spread pieces (int3). The block tile and the word kernels both ask it.
template <class Fam>
constexpr bool bf16_dot_built() { return Bf16Dot::kAvailable && (!Fam::kSpread || Bf16Dot::kInt3); }
}  // namespace mq::kdetail

#if defined(__AVX512VNNI__) && defined(__AVX512F__)
#include <immintrin.h>

#include <cstring>

namespace mq::kdetail {

// The dynamic kernels' 16-row blocks (blocked.h): one 512-bit register = 16 rows x 4 bytes of
// weights, or 16 rows' int32 partial dots, or 16 rows' float sums.
struct Vnni16 {
  static constexpr bool kAvailable = true;
  static constexpr const char* kName = "vnni";
  // vpdpbusd reads its accumulator: a tile of fewer than 8 accumulators splits each into two chains.
  static constexpr bool kSplitChains = true;
  static constexpr int kDecodeBlocks = 4;  // blocks per one-token tile
  static constexpr int kTileTokens = 8;    // tokens per several-token tile (one block)
  using U = __m512i;   // 16 rows x 4 unsigned weight bytes
  using I = __m512i;   // 16 x int32 partial dots
  using Fv = __m512;   // 16 x float sums
  static U load(const uint8_t* p) { return _mm512_load_si512(p); }  // blocks are 64-byte aligned
  // 16 rows x 8 int4 fields: low nibbles (columns 0-3 of the step) and high nibbles (columns 4-7).
  static void nibbles(const U& w, U& lo, U& hi) {
    const __m512i m = _mm512_set1_epi8(0x0F);
    lo = _mm512_and_si512(w, m);
    hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), m);
  }
  // 16 rows x 16 int2 fields: f[j] holds bits 2j .. 2j+1 of every byte (columns 4b + j of the step, b = 0..3).
  // The 16-bit shift pulls the next byte's low bits into each byte's top, which the mask drops.
  static void crumbs(const U& w, U f[4]) {
    const __m512i m = _mm512_set1_epi8(0x03);
    f[0] = _mm512_and_si512(w, m);
    f[1] = _mm512_and_si512(_mm512_srli_epi16(w, 2), m);
    f[2] = _mm512_and_si512(_mm512_srli_epi16(w, 4), m);
    f[3] = _mm512_and_si512(_mm512_srli_epi16(w, 6), m);
  }
  // int3 (kInt3: VBMI builds): a 96-byte step (16 lanes x two 3-byte pieces, piece p holding columns 8p .. 8p+7 at
  // bits 3c of its 24 bits) into four registers, f[j]'s lane holding columns 4j .. 4j+3 as bytes. Per piece one
  // vpermi2b puts lane 2k's piece in bytes 0 .. 2 of qword k and lane 2k+1's in bytes 3 .. 5; then per register
  // one vpmultishiftqb moves each field to a byte of its own (bits 12 (j % 2) + 3c of the lane's piece) and the
  // mask keeps its 3 bits. Nothing past the step is read (the second load is masked to 32 bytes).
#if defined(__AVX512VBMI__)
  static constexpr bool kInt3 = true;
  struct Int3Spread {
    alignas(64) uint8_t ix[2][64];    // vpermi2b, per piece: byte m of qword k <- step byte
    alignas(64) uint8_t ctrl[2][64];  // vpmultishiftqb, per half piece: byte m of qword k <- 8 bits from this bit
    constexpr Int3Spread() : ix{}, ctrl{} {
      for (int k = 0; k < 8; ++k)
        for (int m = 0; m < 8; ++m) {
          for (int p = 0; p < 2; ++p)  // bytes 0 .. 2: lane 2k's piece p, 3 .. 5: lane 2k+1's, 6, 7 unused
            ix[p][8 * k + m] = static_cast<uint8_t>(m < 6 ? 6 * (2 * k + m / 3) + 3 * p + m % 3 : 0);
          for (int h = 0; h < 2; ++h)  // bytes 0 .. 3: lane 2k's columns 4h .. 4h+3 of the piece, 4 .. 7: lane 2k+1's
            ctrl[h][8 * k + m] = static_cast<uint8_t>(24 * (m / 4) + 12 * h + 3 * (m % 4));
        }
    }
  };
  static void pieces3(const uint8_t* p, U f[4]) {
    alignas(64) static constexpr Int3Spread kS{};
    const Int3StepBytes step = Int3StepBytes::load(p);
    const __m512i m = _mm512_set1_epi8(0x07);
    for (int piece = 0; piece < 2; ++piece) {
      const __m512i g = step.spread(kS.ix[piece]);
      for (int h = 0; h < 2; ++h)
        f[2 * piece + h] = _mm512_and_si512(_mm512_multishift_epi64_epi8(_mm512_load_si512(kS.ctrl[h]), g), m);
    }
  }
#else
  static constexpr bool kInt3 = false;
#endif
  // acc += u . (a[0..3] broadcast) per lane: vpdpbusd with an embedded {1to16} broadcast (exact for
  // any field width, so ByteFields plays no part).
  template <bool ByteFields>
  static void dot(I& acc, const U& u, const int8_t* a) {
    int32_t v;
    std::memcpy(&v, a, 4);
    acc = _mm512_dpbusd_epi32(acc, u, _mm512_set1_epi32(v));
  }
  static I iset(int32_t v) { return _mm512_set1_epi32(v); }
  // -(z_lane * m) per lane: the asymmetric zero-point term of one group, as the accumulator's start.
  static I izeros(const uint8_t* z16, int32_t m) {
    const __m512i z = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(z16)));
    return _mm512_mullo_epi32(z, _mm512_set1_epi32(-m));
  }
  static I iadd(const I& a, const I& b) { return _mm512_add_epi32(a, b); }
  static Fv fzero() { return _mm512_setzero_ps(); }
  static Fv scales(const uint16_t* s16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s16)));
  }
  static void flush(Fv& f, const I& acc, const Fv& s) { f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), s, f); }
  // y[0 .. valid) = f * sx.
  static void store(float* y, const Fv& f, float sx, int valid) {
    const __mmask16 m = valid >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << valid) - 1u);
    _mm512_mask_storeu_ps(y, m, _mm512_mul_ps(f, _mm512_set1_ps(sx)));
  }
};

}  // namespace mq::kdetail

#else

namespace mq::kdetail {
struct Vnni16 {
  static constexpr bool kAvailable = false;
};
}  // namespace mq::kdetail

#endif

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include <cstring>

namespace mq::kdetail {

// The same 16-row block semantics on AVX2 without VNNI (Zen 3, Intel before Ice Lake): one block step is
// two 256-bit halves (lanes 0-7 and 8-15). vpdpbusd's u8 x s8 4-byte dot becomes vpmaddubsw (adjacent
// byte products summed into int16, saturating) then vpmaddwd against ones (adjacent int16 pairs into the
// int32 lane), then vpaddd. The int16 step is exact only while |u0 a0 + u1 a1| <= 32767: int4 fields
// (u <= 15) give at most 2 * 15 * 127 = 3810 and int2 fields (u <= 3) 762; int8 fields (u <= 255) could
// reach 64770, so they are split into nibbles, u = 16 h + l, and the high nibble's pairs are weighted by 16 in vpmaddwd.
// Every step is exact integer arithmetic and the float steps (convert, fma per group, token scale) are
// the portable twin's, so the results are bit-identical to it.
struct Avx2x16 {
  static constexpr bool kAvailable = true;
  static constexpr const char* kName = "avx2";
  // The accumulator chain is only the vpaddd (1 cycle): no split chains, and tiles small enough that
  // the accumulators stay in 16 ymm registers (4 blocks x 2 halves for one token; 4 tokens x 2 halves).
  static constexpr bool kSplitChains = false;
  static constexpr int kDecodeBlocks = 4;
  static constexpr int kTileTokens = 4;
  struct U { __m256i h[2]; };  // 16 rows x 4 bytes: lanes 0-7, lanes 8-15
  struct I { __m256i h[2]; };  // 16 x int32
  struct Fv { __m256 h[2]; };  // 16 x float
  static U load(const uint8_t* p) {  // blocks are 64-byte aligned
    return {{_mm256_load_si256(reinterpret_cast<const __m256i*>(p)), _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 32))}};
  }
  static void nibbles(const U& w, U& lo, U& hi) {
    const __m256i m = _mm256_set1_epi8(0x0F);
    for (int k = 0; k < 2; ++k) {
      lo.h[k] = _mm256_and_si256(w.h[k], m);
      hi.h[k] = _mm256_and_si256(_mm256_srli_epi16(w.h[k], 4), m);
    }
  }
  static constexpr bool kInt3 = false;  // int3's +a8 / +a16 run the portable twin (no vpermi2b before VBMI)
  static void crumbs(const U& w, U f[4]) {  // as Vnni16::crumbs, per 256-bit half
    const __m256i m = _mm256_set1_epi8(0x03);
    for (int k = 0; k < 2; ++k) {
      f[0].h[k] = _mm256_and_si256(w.h[k], m);
      f[1].h[k] = _mm256_and_si256(_mm256_srli_epi16(w.h[k], 2), m);
      f[2].h[k] = _mm256_and_si256(_mm256_srli_epi16(w.h[k], 4), m);
      f[3].h[k] = _mm256_and_si256(_mm256_srli_epi16(w.h[k], 6), m);
    }
  }
  template <bool ByteFields>
  static void dot(I& acc, const U& u, const int8_t* a) {
    if constexpr (!ByteFields) {  // nibble fields: vpmaddubsw takes them as they are
      int32_t v;
      std::memcpy(&v, a, 4);
      const __m256i av = _mm256_set1_epi32(v);
      const __m256i ones = _mm256_set1_epi16(1);
      for (int k = 0; k < 2; ++k)
        acc.h[k] = _mm256_add_epi32(acc.h[k], _mm256_madd_epi16(_mm256_maddubs_epi16(u.h[k], av), ones));
    } else {
      U lo, hi;
      nibbles(u, lo, hi);
      dot_split(acc, lo, hi, a);
    }
  }
  // int8 fields already split into nibbles (u = 16 hi + lo): a tile splits each weight step once and
  // reuses it for all its tokens (kSplitBytes), instead of once per token in dot<8>.
  static constexpr bool kSplitBytes = true;
  static void dot_split(I& acc, const U& lo, const U& hi, const int8_t* a) {
    int32_t v;
    std::memcpy(&v, a, 4);
    const __m256i av = _mm256_set1_epi32(v);
    for (int k = 0; k < 2; ++k) {
      const __m256i plo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo.h[k], av), _mm256_set1_epi16(1));
      const __m256i phi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi.h[k], av), _mm256_set1_epi16(16));
      acc.h[k] = _mm256_add_epi32(acc.h[k], _mm256_add_epi32(plo, phi));
    }
  }
  static I iset(int32_t v) { return {{_mm256_set1_epi32(v), _mm256_set1_epi32(v)}}; }
  static I izeros(const uint8_t* z16, int32_t m) {
    const __m256i f = _mm256_set1_epi32(-m);
    I r;
    for (int k = 0; k < 2; ++k)
      r.h[k] = _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(z16 + 8 * k))), f);
    return r;
  }
  static I iadd(const I& a, const I& b) { return {{_mm256_add_epi32(a.h[0], b.h[0]), _mm256_add_epi32(a.h[1], b.h[1])}}; }
  static Fv fzero() { return {{_mm256_setzero_ps(), _mm256_setzero_ps()}}; }
  static Fv scales(const uint16_t* s16) {
    return {{_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s16))),
             _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s16 + 8)))}};
  }
  static void flush(Fv& f, const I& acc, const Fv& s) {
    for (int k = 0; k < 2; ++k) f.h[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc.h[k]), s.h[k], f.h[k]);
  }
  // y[0 .. valid) = f * sx.
  static void store(float* y, const Fv& f, float sx, int valid) {
    const __m256 m = _mm256_set1_ps(sx);
    if (valid >= 16) {
      _mm256_storeu_ps(y, _mm256_mul_ps(f.h[0], m));
      _mm256_storeu_ps(y + 8, _mm256_mul_ps(f.h[1], m));
      return;
    }
    alignas(32) float t[16];
    _mm256_store_ps(t, _mm256_mul_ps(f.h[0], m));
    _mm256_store_ps(t + 8, _mm256_mul_ps(f.h[1], m));
    std::memcpy(y, t, sizeof(float) * static_cast<size_t>(valid));
  }
};

}  // namespace mq::kdetail

#else

namespace mq::kdetail {
struct Avx2x16 {
  static constexpr bool kAvailable = false;
};
}  // namespace mq::kdetail

#endif

#if defined(__F16C__)
#include <immintrin.h>
namespace mq::kdetail {
// fp16 -> fp32 for a run of scales, 8 per vcvtph2ps (the scalar conversion was a third of the int4-g64
// GEMV's time); with AVX-512 (BW + VL) the last n % 8 too, through a masked load and store (short rows have
// 4 groups: MiniGPT's 256-wide int4-g64 rows). Returns how many it converted; the caller does the rest.
struct F16Run {
  static constexpr bool kAvailable = true;
  static int64_t convert(const uint16_t* h, int64_t n, float* out) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    if (i < n) {
      const __mmask8 m = static_cast<__mmask8>((1u << (n - i)) - 1u);
      _mm256_mask_storeu_ps(out + i, m, _mm256_cvtph_ps(_mm_maskz_loadu_epi16(m, h + i)));
      i = n;
    }
#endif
    return i;
  }
};
}  // namespace mq::kdetail
#else
namespace mq::kdetail {
struct F16Run {
  static constexpr bool kAvailable = false;
  static int64_t convert(const uint16_t*, int64_t, float*) { return 0; }
};
}  // namespace mq::kdetail
#endif

#if defined(__AVX2__) && !defined(__AVX512F__)
#include <immintrin.h>
namespace mq::kdetail {
// int3 weight-only blocks (word_kernel.h DecInt3) on 256-bit lanes: 24 bytes of the bit stream = 8 lanes x
// 3 bytes, lane j zero-extended from bytes 3j..3j+2. Two 16-byte loads (bytes 0-15 and 8-23, so nothing
// past the block is read: a row's last whole block ends at or before its last byte) and one in-lane byte
// shuffle. AVX-512 builds (16 lanes) take the VBMI form below, or DecInt3's portable load without VBMI.
struct Int3Words {
  static constexpr bool kAvailable = true;
  static xsimd::batch<uint32_t> load(const uint8_t* p) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8));
    const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    // low half: bytes 0-11 of the block from lo; high half: bytes 12-23, at 4-15 of hi.
    const __m256i idx = _mm256_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1,  //
                                         4, 5, 6, -1, 7, 8, 9, -1, 10, 11, 12, -1, 13, 14, 15, -1);
    return xsimd::batch<uint32_t>(_mm256_shuffle_epi8(v, idx));
  }
};
}  // namespace mq::kdetail
#elif defined(__AVX512VBMI__) && defined(__AVX512BW__)
#include <immintrin.h>
namespace mq::kdetail {
// The same int3 lanes on 16 x 32-bit lanes: 48 bytes (a masked load, so nothing past the block is read) and
// one vpermb that puts bytes 3j..3j+2 in lane j and zeroes each lane's top byte.
struct Int3Words {
  static constexpr bool kAvailable = xsimd::batch<uint32_t>::size == 16;
  struct Index {
    alignas(64) uint8_t b[64];
    constexpr Index() : b{} {
      for (int j = 0; j < 16; ++j)
        for (int k = 0; k < 3; ++k) b[4 * j + k] = static_cast<uint8_t>(3 * j + k);
    }
  };
  static xsimd::batch<uint32_t> load(const uint8_t* p) {
    alignas(64) static constexpr Index ix{};
    const __m512i v = _mm512_maskz_loadu_epi8(0xFFFFFFFFFFFFull, p);
    return xsimd::batch<uint32_t>(_mm512_maskz_permutexvar_epi8(0x7777777777777777ull, _mm512_load_si512(ix.b), v));
  }
};
}  // namespace mq::kdetail
#else
namespace mq::kdetail {
struct Int3Words {
  static constexpr bool kAvailable = false;
  // Declared only: named in a discarded `if constexpr` branch (DecInt3Fast), never called or defined.
  static xsimd::batch<uint32_t> load(const uint8_t* p);
};
}  // namespace mq::kdetail
#endif

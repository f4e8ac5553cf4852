// Weight-only kernel core, part 1 of 4: the decoders (word_kernel.h has the design). A decoder says how
// a 32-bit word of F fields turns into F float vectors (field<K>), how a block of L lanes is loaded
// (block_bytes / load_block), and how one value of a row tail is read (scalar).
#pragma once
#include <cstdint>
#include <cstring>
#include <utility>

// gcc 12 flags the `__Y` placeholder inside its own AVX-512 headers as uninitialized wherever xsimd
// inlines them (a false positive, like the -Wmaybe-uninitialized one CMakeLists.txt silences).
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <xsimd/xsimd.hpp>

#include "miniquant/half.h"
#include "miniquant/kernels/isa_x86.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/pack.h"
#include "miniquant/quantize.h"

namespace mq::kdetail {

using fbatch = xsimd::batch<float>;
using ubatch = xsimd::batch<uint32_t>;
using ibatch = xsimd::batch<int32_t>;
inline constexpr int64_t L = static_cast<int64_t>(fbatch::size);

// --- decoders: F fields per 32-bit word; field<K>(word) as floats; scalar(row, c) for row tails ---

struct DecF32 {
  static constexpr int F = 1;
  static constexpr bool kScaled = false;
  static constexpr bool kContiguous = false;  // fields are interleaved: x is permuted
  template <int K> static fbatch field(const ubatch& w) { return xsimd::bitwise_cast<fbatch>(w); }
  static float scalar(const uint8_t* row, int64_t c) {
    float v;
    std::memcpy(&v, row + 4 * c, 4);
    return v;
  }
};

struct DecBF16 {
  static constexpr int F = 2;
  static constexpr bool kScaled = false;
  static constexpr bool kContiguous = false;  // fields are interleaved: x is permuted
  // bf16 is the top half of an fp32: moving it there is the whole conversion.
  template <int K> static fbatch field(const ubatch& w) {
    if constexpr (K == 0) return xsimd::bitwise_cast<fbatch>(w << 16);
    else return xsimd::bitwise_cast<fbatch>(w & ubatch(0xFFFF0000u));
  }
  static float scalar(const uint8_t* row, int64_t c) {
    uint16_t h;
    std::memcpy(&h, row + 2 * c, 2);
    return bf16_to_f32(h);
  }
};

struct DecF16 {
  static constexpr int F = 2;
  static constexpr bool kScaled = false;
  static constexpr bool kContiguous = false;  // fields are interleaved: x is permuted
  // Exponent+mantissa moved into fp32 position, then one multiply by 2^112 rebiases the exponent
  // (15 -> 127) and turns fp16 subnormals into the right normal floats, exactly. Finite inputs only:
  // quantize() never stores Inf/NaN.
  static fbatch from_half(const ubatch& h) {
    const ubatch em = (h & ubatch(0x7FFFu)) << 13;
    const fbatch mag = xsimd::bitwise_cast<fbatch>(em) * fbatch(0x1p112f);
    const ubatch sign = (h & ubatch(0x8000u)) << 16;
    return xsimd::bitwise_cast<fbatch>(xsimd::bitwise_cast<ubatch>(mag) | sign);
  }
  template <int K> static fbatch field(const ubatch& w) {
    if constexpr (K == 0) return from_half(w);  // from_half masks the high half away
    else return from_half(w >> 16);
  }
  static float scalar(const uint8_t* row, int64_t c) {
    uint16_t h;
    std::memcpy(&h, row + 2 * c, 2);
    return f16_to_f32(h);
  }
};

// The F16C decoder with DecF16's scalar tail.
struct DecF16Fast : DecF16Wide {
  static float scalar(const uint8_t* row, int64_t c) { return DecF16::scalar(row, c); }
};

template <int Bits>
struct DecInt {
  static_assert(32 % Bits == 0, "fields must tile a 32-bit word");
  static constexpr int F = 32 / Bits;
  static constexpr bool kScaled = true;
  static constexpr bool kContiguous = false;
  static constexpr uint32_t kMask = (1u << Bits) - 1u;
  // The unsigned field u as a float (exact: u < 2^8). The first field needs no shift, the last no mask.
  template <int K> static fbatch field(const ubatch& w) {
    ubatch f = w;
    if constexpr (K > 0) f = f >> (Bits * K);
    if constexpr (K < F - 1) f = f & ubatch(kMask);
    return xsimd::to_float(xsimd::bitwise_cast<ibatch>(f));
  }
  static float scalar(const uint8_t* row, int64_t c) { return static_cast<float>(field_at(row, c, Bits)); }
};

// int3: a block is 3L bytes of the row's bit stream (pack.h: every 3 bytes hold 8 fields), lane j the
// 24 bits of bytes 3j..3j+2 zero-extended, i.e. fields 8j..8j+7, so decoding is DecInt's (shift 3K,
// mask) and the lane/group layout is that of 8 fields per lane. Nothing past the block is read: for
// whole blocks, 3L bytes are 8L fields. This portable load assembles the lanes byte by byte; DecInt3Fast
// does it with one shuffle.
struct DecInt3 {
  static constexpr int F = 8;
  static constexpr bool kScaled = true;
  static constexpr bool kContiguous = false;
  static constexpr int64_t kBlockBytes = 3 * L;
  static ubatch load(const uint8_t* blk) {
    alignas(64) uint32_t v[L];
    for (int64_t j = 0; j < L; ++j)
      v[j] = uint32_t{blk[3 * j]} | (uint32_t{blk[3 * j + 1]} << 8) | (uint32_t{blk[3 * j + 2]} << 16);
    return ubatch::load_aligned(v);
  }
  template <int K> static fbatch field(const ubatch& w) {
    ubatch f = w;
    if constexpr (K > 0) f = f >> (3 * K);
    if constexpr (K < F - 1) f = f & ubatch(7u);  // the last field has bits 24-31 clear above it
    return xsimd::to_float(xsimd::bitwise_cast<ibatch>(f));
  }
  static float scalar(const uint8_t* row, int64_t c) { return static_cast<float>(field_at(row, c, 3)); }
};

// DecInt3 with the AVX2 shuffle load (isa_x86.h Int3Words).
struct DecInt3Fast : DecInt3 {
  static ubatch load(const uint8_t* blk) {
    if constexpr (Int3Words::kAvailable) return Int3Words::load(blk);
    else return DecInt3::load(blk);
  }
};

// Bytes of one block of L lanes, and its load: L consecutive words unless the decoder has its own.
template <class D>
inline constexpr int64_t block_bytes() {
  if constexpr (requires { D::kBlockBytes; }) return D::kBlockBytes;
  else return L * 4;
}
template <class D>
inline ubatch load_block(const uint8_t* row, int64_t b) {
  if constexpr (requires { D::kBlockBytes; }) return D::load(row + b * D::kBlockBytes);
  else return ubatch::load_unaligned(reinterpret_cast<const uint32_t*>(row + b * L * 4));
}

// The byte-shuffle int8 decoder with DecInt<8>'s scalar tail.
struct DecInt8Fast : DecInt8Wide {
  static float scalar(const uint8_t* row, int64_t c) { return static_cast<float>(field_at(row, c, 8)); }
};

// The table-lookup int4 decoder with DecInt<4>'s scalar tail.
struct DecInt4Fast : DecInt4Perm {
  static float scalar(const uint8_t* row, int64_t c) { return static_cast<float>(field_at(row, c, 4)); }
};

// int4 / int3 / int2 on bf16 dot products (isa_x86.h Bf16Dot; AVX-512 BF16 builds only; int3 also needs
// VBMI, Bf16Dot::kInt3). int4 / int2: a block is the same L words as DecInt<Bits>'s, so lane j of the fp32
// accumulators covers fields j*F .. j*F+F-1 and the group layout (lane_scales, groups_per_block) is
// DecInt's. int3: a block is 96 bytes of the bit stream, 32 three-byte pieces of 8 fields, piece i in word i
// of two registers (Bf16Dot::block), so lane j covers pieces 2j and 2j+1: F = 16 fields per lane. Either
// way Fw fields per word (per piece for int3) are decoded by a word table into Fw bf16 vectors and
// multiplied by the activations split into two bf16 each (kernels.h split_bf16, Plan::xh / xl), or, with
// Split = false (ActMode::bf16), by each activation rounded once to bf16 (Plan::xh only): half the dots.
// Symmetric schemes subtract the zero-point in the table (kSignedTable), so no z * sum(x) correction is
// computed; asymmetric ones keep DecInt's correction.
template <class Fam, bool Sym, bool Split = true>
struct DecIntBf16 {
  static constexpr int Bits = Fam::kBits;
  using Isa = Bf16Dot;
  static constexpr bool kBf16 = true;
  static constexpr bool kSplit = Split;  // activations as hi + lo (two dots per weight) or bf16(x) (one)
  static constexpr int kBits = Bits;
  static constexpr bool kSpread = Fam::kSpread;            // 3-byte pieces (Bf16Dot::Block)
  static constexpr int F = Fam::kLaneFields;   // fields per 32-bit lane: the group layout
  static constexpr int Fw = Fam::kWordFields;  // fields per word (piece): bf16 vectors per block
  static constexpr int64_t kBlockBytes = Fam::kWordBlockBytes(L);
  static constexpr bool kScaled = true;
  static constexpr bool kContiguous = false;
  static constexpr bool kSignedTable = Sym;
  static constexpr int kOff = Sym ? 1 << (Bits - 1) : 0;  // the symmetric zero-point, taken off in the table
  static float scalar(const uint8_t* row, int64_t c) {
    return static_cast<float>(static_cast<int>(field_at(row, c, Bits)) - kOff);
  }
};

template <class D>
inline constexpr bool is_bf16() {
  if constexpr (requires { D::kBf16; }) return D::kBf16;
  else return false;
}
// True when the decoder's values already have the zero-point taken off (no correction term).
template <class D>
inline constexpr bool signed_table() {
  if constexpr (requires { D::kSignedTable; }) return D::kSignedTable;
  else return false;
}

}  // namespace mq::kdetail

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
#pragma once
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

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
template <int Bits, bool Sym, bool Split = true>
struct DecIntBf16 {
  using Isa = Bf16Dot;
  static constexpr bool kBf16 = true;
  static constexpr bool kSplit = Split;  // activations as hi + lo (two dots per weight) or bf16(x) (one)
  static constexpr int kBits = Bits;
  static constexpr int F = Bits == 3 ? 16 : 32 / Bits;  // fields per 32-bit lane: the group layout
  static constexpr int Fw = Bits == 3 ? 8 : 16 / Bits;  // fields per word (piece): bf16 vectors per block
  static constexpr int64_t kBlockBytes = Bits == 3 ? 6 * L : 4 * L;
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

// --- per-call plan: permuted x, per-group sums of x ---

struct Plan {
  int64_t rows = 0, cols = 0, n = 0;
  int64_t EB = 0;   // elements per block (L * F)
  int64_t nb = 0;   // whole blocks per row; the rest of a row is a scalar tail
  int64_t ldx = 0;  // stride of one token in xp
  int64_t g = 0;    // group width in elements (cols for float kinds, per-channel, per-tensor)
  int64_t gpr = 0;  // groups per row
  int64_t rbytes = 0;  // bytes of one row's codes (QTensor::row_bytes)
  const float* x = nullptr;  // (n, cols) the caller's activations, for tails
  AlignedVector<float> xp;   // (n, nb * EB) permuted activations, 64-byte aligned like the codes
  // bf16 decoders instead of xp: (n, nb * EB) activations split into two bf16 (split_bf16), in the order
  // the word table decodes them: xh[t*ldx + b*EB + k*2L + i] = hi(x[t*cols + b*EB + i*Fw + k]). Without the
  // split (kSplit false) xh is bf16(x) and xl stays empty.
  AlignedVector<uint16_t> xh, xl;
  std::vector<float> xs;  // bf16 decoders with row tails: (n, cols) hi + lo or bf16(x), the x of the tails (p.x points here)
  std::vector<uint16_t> th, tl;  // bf16 decoders: one token's hi / lo in column order, before the permutation
  std::vector<float> xg;     // (gpr, n) per-group sums of x (integer schemes)
  std::vector<int32_t> block_group;  // (nb) group of each block when one group spans it (no division in the loop)
};

// Fills p for one call, reusing its buffers' capacity (run keeps one Plan per calling thread).
// WT: a QTensor, or a view with the same members (FloatRows: fp32 weights the caller owns).
template <class D, class WT>
inline void make_plan(Plan& p, const WT& w, const float* x, int64_t n) {
  constexpr int F = D::F;
  constexpr bool scaled = D::kScaled, contiguous = D::kContiguous;
  p.rows = w.rows;
  p.cols = w.cols;
  p.n = n;
  p.EB = L * F;
  p.nb = w.cols / p.EB;
  p.ldx = p.nb * p.EB;
  p.rbytes = w.row_bytes();
  p.x = x;
  p.g = scaled ? w.scheme.group_width(w.cols) : w.cols;
  p.gpr = scaled ? w.scheme.groups_per_row(w.cols) : 1;
  if constexpr (is_bf16<D>()) {
    if (p.nb * p.EB < w.cols) {  // the scalar tails multiply the same x' = hi + lo (or bf16(x)) as the blocks
      p.xs.resize(static_cast<size_t>(n * w.cols));
      for (size_t i = 0; i < p.xs.size(); ++i) p.xs[i] = D::kSplit ? bf16_pair_value(x[i]) : bf16_round(x[i]);
      p.x = p.xs.data();
    }
    p.xh.resize(static_cast<size_t>(n * p.ldx));
    p.xl.resize(D::kSplit ? static_cast<size_t>(n * p.ldx) : 0);
    std::vector<uint16_t>& hi = p.th;  // one token's halves, in column order
    std::vector<uint16_t>& lo = p.tl;
    hi.resize(static_cast<size_t>(p.ldx));
    lo.resize(hi.size());
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t c = 0; c < p.ldx; c += 16) D::Isa::split16(x + t * w.cols + c, hi.data() + c, lo.data() + c);
      for (int64_t b = 0; b < p.nb; ++b)
        for (int64_t k = 0; k < D::Fw; ++k)
          for (int64_t i = 0; i < 2 * L; ++i) {
            const int64_t at = t * p.ldx + b * p.EB + k * 2 * L + i, from = b * p.EB + i * D::Fw + k;
            p.xh[at] = hi[from];
            if constexpr (D::kSplit) p.xl[at] = lo[from];
          }
    }
  } else {
    p.xp.resize(static_cast<size_t>(n * p.ldx));
    for (int64_t t = 0; t < n; ++t)
      for (int64_t b = 0; b < p.nb; ++b)
        for (int64_t k = 0; k < F; ++k)
          for (int64_t j = 0; j < L; ++j)
            p.xp[t * p.ldx + b * p.EB + k * L + j] = x[t * w.cols + b * p.EB + (contiguous ? k * L + j : j * F + k)];
  }
  p.block_group.resize(static_cast<size_t>(p.nb));
  for (int64_t b = 0; b < p.nb; ++b) p.block_group[b] = static_cast<int32_t>(p.g > 0 ? (b * p.EB) / p.g : 0);
  if (scaled && !signed_table<D>()) {
    p.xg.assign(static_cast<size_t>(p.gpr * n), 0.0f);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t gi = 0; gi < p.gpr; ++gi) {
        double s = 0.0;  // exact enough that the z * sum(x) correction adds no error of its own order
        for (int64_t c = gi * p.g; c < (gi + 1) * p.g; ++c) {
          if constexpr (is_bf16<D>()) s += D::kSplit ? x[t * w.cols + c] : bf16_round(x[t * w.cols + c]);  // the x multiplied
          else s += x[t * w.cols + c];
        }
        p.xg[gi * n + t] = static_cast<float>(s);
      }
  }
}

// Lane j of a block covers elements j*F .. j*F+F-1, i.e. group (j * M) / L when M groups share a block.
template <int M>
struct GroupOfLane {
  static constexpr uint32_t get(unsigned j, unsigned size) { return j * M / size; }
};

// Scale of every lane of block b. M == 0: one group spans the block (g a multiple of EB, or one
// group per row); otherwise M = EB / g groups per block, their scales at sf[b*M ..].
template <int M>
inline fbatch lane_scales(const float* sf, const Plan& p, int64_t b) {
  if constexpr (M == 0) {
    return fbatch(sf[p.block_group[b]]);
  } else {
    const fbatch s = fbatch::load_unaligned(sf + b * M);  // sf is padded by L floats
    return xsimd::swizzle(s, xsimd::make_batch_constant<ubatch, GroupOfLane<M>>());
  }
}

// out[i] = sum of v[i]'s lanes, i < N: 4 or 8 vectors share one shuffle tree where the ISA has it
// (isa_x86.h LaneSums), otherwise one reduction each.
template <int N, class V>
[[gnu::always_inline]] inline void lane_sums(const V* v, float* out) {
  if constexpr (LaneSums::kAvailable && (N == 4 || N == 8)) {
    fbatch a[N];
#pragma GCC unroll 8
    for (int i = 0; i < N; ++i) a[i] = fbatch(v[i]);
    LaneSums::template sums<N>(a, out);
  } else {
    for (int i = 0; i < N; ++i) out[i] = xsimd::hadd(fbatch(v[i]));
  }
}

template <class D, int... K>
inline void decode_all(const ubatch& w, fbatch* f, std::integer_sequence<int, K...>) {
  ((f[K] = D::template field<K>(w)), ...);
}

// The part of a row past its whole blocks (cols not a multiple of the block), scalar: sum of
// s_g * u * x (integer) or w * x (float) over columns nb*EB .. cols. x: (cols) one token.
template <class D>
inline float row_tail(const uint8_t* row, const float* sf, const Plan& p, const float* x) {
  float tail = 0.0f;
  for (int64_t c = p.nb * p.EB; c < p.cols; ++c) {
    const float v = D::scalar(row, c) * x[c];
    tail += D::kScaled ? sf[c / p.g] * v : v;
  }
  return tail;
}

// The end of every tile: out[i * T + t] = the lane sum of acc[i * T + t] plus row i's scalar tail for token t0 + t.
// acc: (R * T) vectors (fbatch, or the bf16 tiles' fp32 accumulators).
template <class D, int R, int T, class V>
[[gnu::always_inline]] inline void finish_tile(const V* acc, const uint8_t* const* rows, const float* const* sf, const Plan& p,
                                               int64_t t0, float* out) {
  lane_sums<R * T>(acc, out);
  if (p.nb * p.EB < p.cols)
    for (int i = 0; i < R; ++i)
      for (int t = 0; t < T; ++t) out[i * T + t] += row_tail<D>(rows[i], sf[i], p, p.x + (t0 + t) * p.cols);
}

// One block b of a row into the accumulator acc[Slot] (Slot a compile-time constant, so the
// accumulators stay in registers). The field loop is unrolled (pragmas): otherwise gcc keeps the decoded
// fields and the accumulators in stack arrays.
template <class D, int M, int Slot>
inline void block_into(const uint8_t* row, const float* sf, const Plan& p, int64_t b, fbatch* acc) {
  constexpr int F = D::F;
  const ubatch w = load_block<D>(row, b);
  fbatch f[F];
  decode_all<D>(w, f, std::make_integer_sequence<int, F>());
  const float* xk = p.xp.data() + b * p.EB;
  if constexpr (D::kScaled) {
    // The block's fields go to up to 4 independent partial sums (a single chain of dependent FMAs,
    // 4 cycles each, is what narrow rows could not hide), scaled once per block.
    constexpr int kPart = F >= 4 ? 4 : F;
    fbatch part[kPart];
#pragma GCC unroll 16
    for (int i = 0; i < kPart; ++i) part[i] = fbatch(0.0f);
#pragma GCC unroll 16
    for (int k = 0; k < F; ++k) part[k % kPart] = xsimd::fma(f[k], fbatch::load_unaligned(xk + k * L), part[k % kPart]);
    fbatch sum = part[0];
#pragma GCC unroll 16
    for (int i = 1; i < kPart; ++i) sum += part[i];
    acc[Slot] = xsimd::fma(sum, lane_scales<M>(sf, p, b), acc[Slot]);
  } else {
#pragma GCC unroll 16
    for (int k = 0; k < F; ++k) acc[Slot] = xsimd::fma(f[k], fbatch::load_unaligned(xk + k * L), acc[Slot]);
  }
}

template <class D, int M, int... S>
inline void blocks_into(const uint8_t* row, const float* sf, const Plan& p, int64_t b, fbatch* acc,
                        std::integer_sequence<int, S...>) {
  (block_into<D, M, S>(row, sf, p, b + S, acc), ...);
}

// Decode reads R rows as R separate streams; prefetching this far ahead of each (in bytes) keeps the
// weights arriving where the hardware prefetcher alone falls behind. Measured on one thread at
// 4096x4096: fp16 1523 -> 1160 us, bf16 1377 -> 996 us, fp32 2066 -> 1834 us (2048 bytes: no better).
inline constexpr int64_t kRowPrefetchBytes = 1024;
// The bf16 one-token tile does more work per byte (a 64-byte block is 4 decodes and 8 dots per row), so its
// prefetches run further ahead: 4096x4096 int4-g64 from DRAM, 1 thread, Zen 5, two rounds: 735 / 734 us at
// 1024 bytes, 666 / 649 at 2048; 4096 and prefetcht2 (locality 1) were no better than noise.
inline constexpr int64_t kBf16PrefetchBytes = 2048;

// The address `dist` bytes ahead of byte `off` in the stream of row i of an R-row decode tile. The tile's rows
// are R consecutive rows of the tensor, so past its end row i continues in row i + R (the next tile's row i),
// not in row i + 1, which this tile is reading already: prefetching straight on (row + off + dist) left rows
// 1..R-1 of every tile to start cold whenever a row is not much longer than dist (an int4 row of 4096 is 2048
// bytes, an int8 row 4096). rbytes: bytes per row. The distance is capped at one row (one tile ahead), so the
// target never runs past the next tile's row i (an int3 row of 4096 is 1536 bytes). Past the tensor's end is
// harmless (a prefetch never faults).
template <int R>
[[gnu::always_inline]] inline const uint8_t* stream_ahead(const uint8_t* row, int64_t off, int64_t dist, int64_t rbytes) {
  const int64_t at = off + std::min(dist, rbytes);
  return row + (at < rbytes ? at : at + (R - 1) * rbytes);
}

// R rows x T tokens of a bf16 decoder (DecIntBf16), block by block: a field is decoded once per row and
// each activation vector loaded once for the R rows; the block's dots (2 Fw vdpbf16ps per row and token:
// hi and lo activations, or Fw with the activations rounded once) go to P partial sums per output, then one
// FMA by the lanes' group scales into the output's accumulator. out[i * T + t] = row i, token t0 + t (without
// the zero-point correction of an asymmetric scheme).
// The shape is set by vdpbf16ps's latency: on Zen 5 a single chain issues one every 1.75 ns and it takes 12-16
// independent chains to reach the unit's rate (a dot every 0.148 ns; 12 chains 0.158 ns, 8 chains 0.218 ns;
// bench/dot_chains.cpp, 2026-11-26), and out-of-order execution overlaps little of one block's chains with the
// next's (a block of 4 rows is ~70 vector instructions). The partials are reset every block (each block has its own
// group scales), so the chains available are rows x partials x blocks in flight. Measured, 4096x4096 int4-g64, 1
// thread, weights in cache, medians of 15, the variants of one run interleaved:
//   one token, split (8 dots per row and block): 4 rows x 2 partials (hi, lo) x 1 block, 278-285 us; 4 partials
//   304-323 us (the 3-add tree per row and block sits on the chain); 2 blocks x 1 partial 288-305 us; 2 blocks x 2
//   partials 320-356 us (35 zmm: spills); 3 or 6 rows, 306-350 us.
//   one token, activations rounded (4 dots per row and block): 2 blocks x 1 partial (KB = 2), 229-241 us; 1 block x
//   2 partials 258-274 us; 3 blocks 247-254 us.
// Before the prefetch fix (stream_ahead) 4 partials had been the faster (353 against 399 us). Several tokens: 2 x 4
// outputs, two partials each, 16 chains where one each left 8 and the dot units waiting (8 + 16 zmm; 256x1024
// int4-g64 at 64 tokens, with lane_sums: 319 -> 269 us, 1 thread, Zen 5).
template <class D, int M, int R, int T>
inline void bf16_tile(const uint8_t* const* rows, const float* const* sf, const Plan& p, int64_t t0, float* out) {
  using B = typename D::Isa;
  using W = typename B::W;
  using A = typename B::A;
  constexpr bool kOneBlockTwoPartials = T > 1 || D::kSplit;
  constexpr int P = kOneBlockTwoPartials ? 2 : 1;   // partials per output and block
  constexpr int KB = kOneBlockTwoPartials ? 1 : 2;  // blocks per step, their fields interleaved
  const W tab = B::template table<D::kBits, D::kOff>();
  A acc[R * T];
#pragma GCC unroll 8
  for (int i = 0; i < R * T; ++i) acc[i] = B::zero();
  const uint16_t* xh = p.xh.data() + t0 * p.ldx;
  [[maybe_unused]] const uint16_t* xl = D::kSplit ? p.xl.data() + t0 * p.ldx : nullptr;
  // Blocks b .. b + NB - 1 into acc. always_inline: a lambda left out of line keeps acc and the partials in memory.
  const auto step = [&]<int NB>(int64_t b) __attribute__((always_inline)) {
    typename B::template Block<D::kBits> w[NB][R];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j)
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        if constexpr (T == 1)  // every cache line of the block (int3's are 96 bytes: one prefetch left a third uncovered)
#pragma GCC unroll 2
          for (int64_t o = 0; o < D::kBlockBytes; o += 64)
            __builtin_prefetch(stream_ahead<R>(rows[i], (b + j) * D::kBlockBytes + o, kBf16PrefetchBytes, p.rbytes));
        w[j][i] = B::template block<D::kBits>(rows[i] + (b + j) * D::kBlockBytes);
      }
    A part[NB][R * T][P];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j)
#pragma GCC unroll 16
      for (int i = 0; i < R * T; ++i)
#pragma GCC unroll 2
        for (int q = 0; q < P; ++q) part[j][i][q] = B::zero();
    [&]<int... K>(std::integer_sequence<int, K...>) {
      (
          [&] {
#pragma GCC unroll 4
            for (int j = 0; j < NB; ++j) {
              const int64_t xo = (b + j) * p.EB;
              W f[R];
#pragma GCC unroll 8
              for (int i = 0; i < R; ++i) f[i] = B::template field<D::kBits, K>(w[j][i], tab);
#pragma GCC unroll 8
              for (int t = 0; t < T; ++t) {
                const W h = B::load(xh + t * p.ldx + xo + K * 2 * L);
                if constexpr (D::kSplit) {
                  const W l = B::load(xl + t * p.ldx + xo + K * 2 * L);
#pragma GCC unroll 8
                  for (int i = 0; i < R; ++i) {
                    A& a0 = part[j][i * T + t][0];
                    A& a1 = part[j][i * T + t][P - 1];
                    a0 = B::dot(a0, f[i], h);
                    a1 = B::dot(a1, f[i], l);
                  }
                } else {
#pragma GCC unroll 8
                  for (int i = 0; i < R; ++i) part[j][i * T + t][K % P] = B::dot(part[j][i * T + t][K % P], f[i], h);
                }
              }
            }
          }(),
          ...);
    }(std::make_integer_sequence<int, D::Fw>());
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j)
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        const A s = lane_scales<M>(sf[i], p, b + j);
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          A sum = part[j][i * T + t][0];
          if constexpr (P == 2) sum = B::add(sum, part[j][i * T + t][1]);
          acc[i * T + t] = B::fma(sum, s, acc[i * T + t]);
        }
      }
  };
  int64_t b = 0;
  for (; b + KB <= p.nb; b += KB) step.template operator()<KB>(b);
  if constexpr (KB > 1)
    for (; b < p.nb; ++b) step.template operator()<1>(b);
  finish_tile<D, R, T>(acc, rows, sf, p, t0, out);
}

// One token (x = the plan's token 0), one row: sum over the row of s_g * u * x (integer) or w * x
// (float), without the zero-point correction. The rows a 4-row decode tile leaves over. row: packed
// codes of one row; sf: its group scales (float, padded).
template <class D, int M>
inline float row_dot(const uint8_t* row, const float* sf, const Plan& p) {
  if constexpr (is_bf16<D>()) {
    float out;
    bf16_tile<D, M, 1, 1>(&row, &sf, p, 0, &out);
    return out;
  } else {
    // Consecutive blocks rotate over kSplit accumulators so the accumulation chain does not serialize
    // the blocks (fp32 has one FMA per block).
    constexpr int kSplit = 4;
    fbatch acc[kSplit];
#pragma GCC unroll 4
    for (int i = 0; i < kSplit; ++i) acc[i] = fbatch(0.0f);
    int64_t b = 0;
    for (; b + kSplit <= p.nb; b += kSplit)
      blocks_into<D, M>(row, sf, p, b, acc, std::make_integer_sequence<int, kSplit>());
    for (; b < p.nb; ++b) block_into<D, M, 0>(row, sf, p, b, acc);
    const float tail = row_tail<D>(row, sf, p, p.x);
    fbatch a = acc[0];
#pragma GCC unroll 4
    for (int i = 1; i < kSplit; ++i) a += acc[i];
    return xsimd::hadd(a) + tail;
  }
}

// Several tokens (prefill), two rows x T tokens per tile: every activation vector loaded feeds two
// FMAs (one per row), and the decoded field is scaled once (s_g * u, per lane) and reused over the T
// tokens, so each FMA goes straight into its output's accumulator. One field at a time keeps the tile
// in registers: 2T accumulators, 2 code words, 2 fields, 2 lane scales (15 of 16 ymm at T = 4). rows[1] may equal
// rows[0] (an odd last row). out[i * T + t] = row i, token t0 + t, without the zero-point correction.
template <class D, int M, int T, int K>
inline void pair_field(const ubatch* w, const fbatch* sv, const float* xk, int64_t ldx, fbatch* acc) {
  fbatch f0 = D::template field<K>(w[0]), f1 = D::template field<K>(w[1]);
  if constexpr (D::kScaled) {
    f0 *= sv[0];
    f1 *= sv[1];
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    const fbatch xv = fbatch::load_unaligned(xk + t * ldx + K * L);
    acc[t] = xsimd::fma(f0, xv, acc[t]);
    acc[T + t] = xsimd::fma(f1, xv, acc[T + t]);
  }
}

template <class D, int M, int T, int... K>
inline void pair_fields(const ubatch* w, const fbatch* sv, const float* xk, int64_t ldx, fbatch* acc,
                        std::integer_sequence<int, K...>) {
  (pair_field<D, M, T, K>(w, sv, xk, ldx, acc), ...);
}

template <class D, int M, int T>
inline void pair_tile(const uint8_t* const* rows, const float* const* sf, const Plan& p, int64_t t0, float* out) {
  if constexpr (is_bf16<D>()) {
    return bf16_tile<D, M, 2, T>(rows, sf, p, t0, out);
  } else {
    fbatch acc[2 * T];
#pragma GCC unroll 16
    for (int i = 0; i < 2 * T; ++i) acc[i] = fbatch(0.0f);
    const float* xb = p.xp.data() + t0 * p.ldx;
    for (int64_t b = 0; b < p.nb; ++b) {
      // Each row streams ahead as the one-token tile's rows do (stream_ahead, the pair being a 2-row tile). A
      // batch of a few tokens reads each weight once per call, from DRAM when the model does not fit the caches:
      // fp32 decode of 4 sequences on the GPT-2-small-shaped body took 20.1-23.2 ms a step without them and
      // 14.5-16.0 ms with them (one sequence: 10-13 ms either way); 2 threads, Intel Xeon VM, three interleaved
      // runs of 32 steps each.
      __builtin_prefetch(stream_ahead<2>(rows[0], b * block_bytes<D>(), kRowPrefetchBytes, p.rbytes));
      __builtin_prefetch(stream_ahead<2>(rows[1], b * block_bytes<D>(), kRowPrefetchBytes, p.rbytes));
      const ubatch w[2] = {load_block<D>(rows[0], b), load_block<D>(rows[1], b)};
      fbatch sv[2] = {fbatch(1.0f), fbatch(1.0f)};
      if constexpr (D::kScaled) sv[0] = lane_scales<M>(sf[0], p, b), sv[1] = lane_scales<M>(sf[1], p, b);
      pair_fields<D, M, T>(w, sv, xb + b * p.EB, p.ldx, acc, std::make_integer_sequence<int, D::F>());
    }
    finish_tile<D, 2, T>(acc, rows, sf, p, t0, out);
  }
}

// One token, R rows at once (decode): each block's activations are loaded once for all R rows, and
// the per-row work outside the block loop (scales, horizontal sums) is spread over R rows' worth of
// blocks. Every row keeps two partial sums per block and one scaled accumulator, 3R independent
// chains, enough to hide the FMA latency. out[i] = row i's sum without the zero-point correction.
template <class D, int M, int R>
inline void rows_tile(const uint8_t* const* rows, const float* const* sf, const Plan& p, float* out) {
  if constexpr (is_bf16<D>()) {
    return bf16_tile<D, M, R, 1>(rows, sf, p, 0, out);
  } else {
    constexpr int F = D::F;
    fbatch acc[R];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) acc[i] = fbatch(0.0f);
    const float* xb = p.xp.data();
    for (int64_t b = 0; b < p.nb; ++b) {
      const float* xk = xb + b * p.EB;
      fbatch xv[F];
#pragma GCC unroll 16
      for (int k = 0; k < F; ++k) xv[k] = fbatch::load_unaligned(xk + k * L);
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        __builtin_prefetch(stream_ahead<R>(rows[i], b * block_bytes<D>(), kRowPrefetchBytes, p.rbytes));
        const ubatch w = load_block<D>(rows[i], b);
        fbatch f[F];
        decode_all<D>(w, f, std::make_integer_sequence<int, F>());
        if constexpr (D::kScaled) {
          fbatch part[2] = {fbatch(0.0f), fbatch(0.0f)};
#pragma GCC unroll 16
          for (int k = 0; k < F; ++k) part[k & 1] = xsimd::fma(f[k], xv[k], part[k & 1]);
          acc[i] = xsimd::fma(part[0] + part[1], lane_scales<M>(sf[i], p, b), acc[i]);
        } else {
#pragma GCC unroll 16
          for (int k = 0; k < F; ++k) acc[i] = xsimd::fma(f[k], xv[k], acc[i]);
        }
      }
    }
    finish_tile<D, R, 1>(acc, rows, sf, p, 0, out);
  }
}

// Row r's group scales as floats (sf) and s_g * z_g (sz, exact: an 11-bit fp16 significand times an
// integer below 256; skipped when sz is null). sf, sz: (gpr). Vectorized: once per row and group, this was a third of a g64
// GEMV's time when every scale went through the scalar software conversion.
inline void row_scales(const QTensor& w, int64_t r, int64_t gpr, int zero_sym, float* sf, float* sz) {
  const bool per_tensor = w.scheme.group == kPerTensor;
  const uint16_t* s16 = w.scales.data() + (per_tensor ? 0 : r * gpr);
  int64_t g = per_tensor ? 0 : F16Run::convert(s16, gpr, sf);
  for (; g < gpr; ++g) sf[g] = f16_to_f32(s16[per_tensor ? 0 : g]);
  if (sz == nullptr) return;  // no zero-point term (signed tables)
  if (w.scheme.symmetric) {
    const float z = static_cast<float>(zero_sym);
    for (g = 0; g < gpr; ++g) sz[g] = sf[g] * z;
  } else {
    for (g = 0; g < gpr; ++g)
      sz[g] = sf[g] * static_cast<float>(field_at(w.zeros.data(), per_tensor ? 0 : r * gpr + g, w.scheme.bits));
  }
}

// corr[t] = sum_g sz[g] * xg[g * n + t]. One token: L lanes of partial sums, so the row's correction is not
// one chain of gpr dependent FMAs (it was the bottleneck of small-group GEMV); several tokens are
// independent sums already. sz: (gpr); xg: (gpr, n); corr: (n).
inline void zero_terms(const float* sz, const float* xg, int64_t gpr, int64_t n, float* corr) {
  if (n == 1) {
    fbatch a(0.0f);
    int64_t g = 0;
    for (; g + L <= gpr; g += L) a = xsimd::fma(fbatch::load_unaligned(sz + g), fbatch::load_unaligned(xg + g), a);
    float tail = 0.0f;
    for (; g < gpr; ++g) tail += sz[g] * xg[g];
    corr[0] = xsimd::hadd(a) + tail;
    return;
  }
  std::fill(corr, corr + n, 0.0f);
  for (int64_t g = 0; g < gpr; ++g)
    for (int64_t t = 0; t < n; ++t) corr[t] += sz[g] * xg[g * n + t];
}

inline int effective_threads(int threads, int64_t work) {
  int nt = threads > 0 ? threads : default_threads();
  if (work < (int64_t{1} << 16)) nt = 1;  // a fork/join costs more than such a product
  return std::max(1, nt);
}

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

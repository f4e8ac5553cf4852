// Weight-only int8, int4, int3 and int2 products on the 16-row block layout (blocked.h) with AVX-512 BF16 dot products: what
// QuantizedLinear runs for int8 / int4 / int3 / int2 in weight-only and +bf16 mode where the CPU has AVX-512 BF16 (format_table.h runs_blocked).
//
// Why a second layout for weight-only: on the row-major codes (word_kernel.h bf16_tile) every output row is a
// horizontal sum, and its partial sums must be scaled and reset every 128 columns (a block of one row holds two
// g64 groups), so a 4-row tile has only 8 vdpbf16ps chains of 4 dots in flight: measured on Zen 5 it ran at
// ~0.24 ns per dot where the unit does 0.148 (bench/dot_chains.cpp), with the decode removed it was no faster.
// In the block layout lane l of a register is row 16b + l, so a row's dot stays in one lane for a whole group (a
// g64 group is 32 dots deep, one scale FMA per 16 rows per group), 8 blocks give 16 independent chains, the
// activations come as a broadcast memory operand and no horizontal sums are left at the end.
//
// Decode: in a k8 step lane l's 32-bit word holds columns 8s .. 8s+7 (byte b: low nibble column b, high
// nibble column 4 + b). Bf16Dot::field<4, K> reads bits 4K .. 4K+3 of each 16-bit half through the bf16 word
// table, so field K of the two halves is columns (0, 2), (4, 6), (1, 3), (5, 7) for K = 0 .. 3 (Int4Family::pair_cols),
// and vdpbf16ps multiplies them by the matching activation pair broadcast to all lanes. The word table takes
// the symmetric zero-point off (u - 8, exact in bf16); asymmetric schemes start each group's sum at
// -z * sum(x') instead.
// int8: a k8 step is two such words per lane (half h: columns 8s + 4h + b in byte b), and a byte does not fit a
// 32-entry word table, so each byte runs as its two nibbles: u = 16 hi + lo, (u - z) / 16 = (hi - z / 16) + lo / 16
// for z = 128 (symmetric) or 0 (asymmetric: -z / 16 * sum(x') starts the group), both tables exact in bf16, and
// the group scale times 16 (exact). Field K of half h's word is then the low (K even) or high (K odd) nibble of
// bytes (0, 2) (K < 2) or (1, 3): two dots against the same activation pair. Twice int4's dots for twice its
// bytes: the same work per byte, which is right for one token (bound by the bytes) but doubles the dots of a
// many-token call. From 8 tokens (16 without the split) int8 instead dequantizes each 2-block item to bf16 u - z
// once for all tokens (dequant8, exact) and multiplies those words (tile_deq): one dot per weight, as int4.
// int2: a step is 16 columns, one word per lane (bits 2j of byte b: column 4b + j), so field K = 0 .. 7 of the two
// 16-bit halves (shift 2K, then the table, whose entries repeat every 4) is columns (K, 8 + K). The same dot per
// weight as int4, on half the bytes: it gains where the bytes bound the call (weights from DRAM), not in cache.
// int3 (VBMI): a step is 16 columns in 96 bytes, each lane two 3-byte pieces of 8 fields (columns 0 .. 7 and
// 8 .. 15). Two vpermi2b spread a step into two words per lane (Bf16Dot::step_reg): register 0 has each piece's
// bytes 0, 1 in one 16-bit half (fields 0 .. 4 at bits 0, 3, .., 12), register 1 its bytes 1, 2 (fields 5 .. 7 at
// bits 7, 10, 13); a shift and the table (entries repeating every 8) then give field F of both pieces, columns
// (F, 8 + F) as for int2. Two spreads per 8 fields on top of int4's shift and table per field.
//
// Activations, as the row-major bf16 kernels: ActMode::weight_only splits each into two bf16, x' = hi + lo
// (kernels.h split_bf16, within 2^-16 |x|), two dots per weight; ActMode::bf16 rounds each once, one dot.
// A call with a NaN, an Inf or a magnitude of 2^126 or more among its activations runs the portable twin in
// fp32 on x as it is (bf16_safe), as the row-major kernels fall back to their fp32 path.
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "miniquant/aligned.h"
#include "miniquant/error.h"
#include "miniquant/half.h"
#include "miniquant/kernels/blocked.h"
#include "miniquant/kernels/isa_x86.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/registry.h"
#include "miniquant/kernels/word_kernel.h"

namespace mq {
namespace kdetail {
namespace {

// One call's activations. hi / lo: (n, cols_pad / 2) 32-bit words, word (kColumns / 2) s + K = the bf16 pair
// field K of step s multiplies (low half first), lo empty without the split; columns past cols are zero. For the
// portable twin instead, fh / fl: (n, cols_pad) the same activations as floats in column order. sum: (n, groups)
// the sum of the multiplied activations over each group (asymmetric schemes' zero-point term; empty for symmetric
// ones).
struct PairActs {
  int64_t n = 0, ld = 0;  // ld = cols_pad / 2
  bool split = false;
  mq::AlignedVector<uint32_t> hi, lo;
  std::vector<float> fh, fl, sum;
  std::vector<uint16_t> th, tl;  // one token's bf16 halves in column order (make_acts' scratch)
};

// raw: the fp32 activations as they are (no split), for calls that cannot be split. words: the ISA path's
// pair words (hi / lo), else the twin's floats (fh / fl). Fills the calling thread's buffer and returns it:
// assign keeps the capacity, so a warm decode call allocates nothing (the row-major kernels keep a thread_local
// Plan for the same reason: malloc / free was half the time outside the tile on 256x256).
template <class Fam>
const PairActs& make_acts(const BlockedCodes& w, const float* x, int64_t n, bool split, bool raw, bool words) {
  thread_local PairActs buffer;
  PairActs& a = buffer;
  a.n = n;
  a.ld = w.cols_pad / 2;
  a.split = split && !raw;
  words = words && !raw;
  if (words) {
    a.hi.assign(static_cast<size_t>(n * a.ld), 0u);
    a.lo.assign(a.split ? a.hi.size() : 0, 0u);
  } else {
    a.fh.assign(static_cast<size_t>(n * w.cols_pad), 0.0f);
    a.fl.assign(a.split ? a.fh.size() : 0, 0.0f);
  }
  a.sum.assign(w.scheme.symmetric ? 0 : static_cast<size_t>(n * w.groups), 0.0f);
  a.th.assign(static_cast<size_t>(w.cols_pad), 0);  // zero past cols
  a.tl.assign(a.th.size(), 0);
  uint16_t* th = a.th.data();
  uint16_t* tl = a.tl.data();
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x + t * w.cols;
    if (raw) {
      std::copy(xt, xt + w.cols, a.fh.data() + t * w.cols_pad);
    } else {
      int64_t c = 0;
#if defined(__AVX512BF16__) && defined(__AVX512BW__)
      for (; c + 16 <= w.cols; c += 16) Bf16Dot::split16(xt + c, th + c, tl + c);
#endif
      for (; c < w.cols; ++c) split_bf16(xt[c], th[c], tl[c]);
    }
    if (words) {
      uint32_t* hw = a.hi.data() + t * a.ld;
      uint32_t* lw = a.split ? a.lo.data() + t * a.ld : nullptr;
      constexpr int64_t kc = Fam::kColumns, kw = kc / 2;  // columns, pair words per step
      for (int64_t s = 0; s < w.cols_pad / kc; ++s)
        for (int k = 0; k < kw; ++k) {
          const auto [p0, p1] = Fam::pair_cols(k);
          const int64_t c0 = kc * s + p0, c1 = kc * s + p1;
          hw[kw * s + k] = uint32_t{th[c0]} | (uint32_t{th[c1]} << 16);
          if (lw) lw[kw * s + k] = uint32_t{tl[c0]} | (uint32_t{tl[c1]} << 16);
        }
    } else if (!raw) {
      for (int64_t c = 0; c < w.cols; ++c) {
        a.fh[t * w.cols_pad + c] = bf16_to_f32(th[c]);
        if (a.split) a.fl[t * w.cols_pad + c] = bf16_to_f32(tl[c]);
      }
    }
    for (int64_t g = 0; g < (a.sum.empty() ? 0 : w.groups); ++g) {
      double sum = 0.0;  // exact enough that the z * sum(x') term adds no error of its own order
      for (int64_t c = g * w.group_k; c < std::min(w.cols, (g + 1) * w.group_k); ++c) {
        if (raw) sum += xt[c];
        else sum += double(bf16_to_f32(th[c])) + (a.split ? double(bf16_to_f32(tl[c])) : 0.0);
      }
      a.sum[t * w.groups + g] = static_cast<float>(sum);
    }
  }
  return a;
}

// The portable twin: the same sums per row and group (field values u - z times x', the hi and lo halves in two
// partial sums, each group's sum scaled by one fma), in plain loops over the QTensor-order fields. Also the fp32
// path for activations that cannot be split (raw PairActs).
template <class Fam>
void twin(const BlockedCodes& w, const PairActs& a, float* y, int threads) {
  for_each_block_output(w, a.n, y, threads, [&](int64_t b, int64_t t, int l) {
    const uint8_t* codes = w.block_codes(b);
    float out = 0.0f;
    for (int64_t g = 0; g < w.groups; ++g) {
      const float z = w.scheme.symmetric ? static_cast<float>(w.zero_sym) : static_cast<float>(w.block_zeros(b, g)[l]);
      float p0 = w.scheme.symmetric ? 0.0f : -z * a.sum[t * w.groups + g], p1 = 0.0f;
      for (int64_t c = g * w.group_k; c < (g + 1) * w.group_k; ++c) {
        const int u = block_field(codes, Fam::slot(l, c), Fam::kBits);
        const float v = w.scheme.symmetric ? static_cast<float>(u - w.zero_sym) : static_cast<float>(u);
        const int64_t at = t * w.cols_pad + c;
        p0 = std::fma(v, a.fh[at], p0);
        if (a.split) p1 = std::fma(v, a.fl[at], p1);
      }
      out = std::fma(p0 + p1, f16_to_f32(w.block_scales(b, g)[l]), out);
    }
    return out;
  });
}

#if defined(__AVX512BF16__) && defined(__AVX512BW__)
// int8's low-nibble table: bf16(lo / 16), exact (4 significant bits).
struct LowNibbles {
  alignas(64) uint16_t t[32];
  constexpr LowNibbles() : t{} {
    for (int i = 0; i < 32; ++i) t[i] = static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(i & 15) / 16.0f) >> 16);
  }
};

// Blocks b0 .. b0+R-1 x tokens t0 .. t0+T-1. Per group each (block, token) keeps two partial sums: hi and lo
// with the split, even and odd fields without; so 2 R T chains (16 for R = 8, T = 1 and R = 2, T = 4).
// Registers: 2 R T partials + R T outputs + the table(s), the codes and one decoded field (27-29 of 32 zmm).
template <class Fam, int R, int T, bool Split, bool Sym>
void tile(const BlockedCodes& w, int64_t b0, const PairActs& a, int64_t t0, float* y) {
  using B = Bf16Dot;
  using W = B::W;
  using A = B::A;
  // Fam's view of a step (int_families.h): field F's register, shift, activation pair, low nibble or not.
  constexpr int kStep = static_cast<int>(sizeof(typename Fam::Step));  // bytes of one step of one block
  constexpr int kWords = static_cast<int>(Fam::kColumns) / 2;          // activation pair words per step
  // int4 / int3 / int2: u - 2^(kBits-1) (or u); int8: the high nibble hi - 8 (or hi), the low one lo / 16 (tlo)
  const W tab = B::table<Fam::kFieldBits, Sym ? Fam::kTableZero : 0>();
  alignas(64) static constexpr LowNibbles kLow{};
  [[maybe_unused]] const W tlo = Fam::kByteFields ? B::load(kLow.t) : tab;
  // int8's values are (u - z) / 16: the group scales times 16, the asymmetric start -z / 16 * sum(x')
  constexpr float kUnit = Fam::kUnit;
  A out[R * T];
#pragma GCC unroll 16
  for (int i = 0; i < R * T; ++i) out[i] = B::zero();
  const int64_t steps = w.group_k / Fam::kColumns;
  const uint8_t* wp[R];
  for (int r = 0; r < R; ++r) wp[r] = w.block_codes(b0 + r);
  for (int64_t g = 0; g < w.groups; ++g) {
    A p0[R * T], p1[R * T];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        p1[r * T + t] = B::zero();
        if constexpr (Sym) p0[r * T + t] = B::zero();
        else p0[r * T + t] = B::mul(B::zeros16(w.block_zeros(b0 + r, g)), B::set1(-a.sum[(t0 + t) * w.groups + g] / kUnit));
      }
    const uint32_t* hi = a.hi.data() + t0 * a.ld + g * steps * kWords;
    const uint32_t* lo = Split ? a.lo.data() + t0 * a.ld + g * steps * kWords : nullptr;
    for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
        for (int o = 0; o < kStep; o += 64) __builtin_prefetch(wp[r] + s * kStep + o + kBlockPrefetchBytes);  // past the end is harmless
      // Field F of row r's step s into its partials, against the field's activation pairs (one per token).
      const auto field = [&]<int F>(int r) __attribute__((always_inline)) {
        constexpr int P = Fam::pair(F);
        // gcc folds the load into the shift
        const W f = B::shifted<Fam::shift(F)>(B::step_reg<Fam::kSpread, Fam::reg(F)>(wp[r] + s * kStep), Fam::low(F) ? tlo : tab);
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          const int i = r * T + t;
          if constexpr (Split) {
            p0[i] = B::dot(p0[i], f, B::pair(hi + t * a.ld + kWords * s + P));
            p1[i] = B::dot(p1[i], f, B::pair(lo + t * a.ld + kWords * s + P));
          } else if constexpr (F % 2 == 0) {
            p0[i] = B::dot(p0[i], f, B::pair(hi + t * a.ld + kWords * s + P));
          } else {
            p1[i] = B::dot(p1[i], f, B::pair(hi + t * a.ld + kWords * s + P));
          }
        }
      };
      if constexpr (!Split && T == 1) {
        // One token, one bf16 per activation: row by row (each row's codes loaded once); 160 against 218 us field
        // by field (4096x4096, Zen 5, the two in one process).
        const uint32_t* h = hi + kWords * s;
        // Row r's step register Q (one load, kept in a register; int3 one spread), then its fields: even fields into
        // p0, odd ones into p1 (int4 / int3 / int2: pair F; int8: pairs 2q, 2q, 2q + 1, 2q + 1 for half q). The
        // step's pairs: int8's 4 in registers, shared by the 8 rows; int4's 4 and int3 / int2's 8 as memory
        // operands (dot_pair: hoisted into registers they spilled). Measured against pairs from memory for int8
        // too and against fields loaded one by one (4096x4096, Zen 5, bench/HISTORY.md).
        const auto reg = [&]<int Q, int... F>(int r, std::integer_sequence<int, F...>) __attribute__((always_inline)) {
          W d = B::step_reg<Fam::kSpread, Q>(wp[r] + s * kStep);
          B::keep(d);
          const auto one = [&]<int G>() __attribute__((always_inline)) {
            if constexpr (Fam::reg(G) == Q) {
              const W f = B::shifted<Fam::shift(G)>(d, Fam::low(G) ? tlo : tab);
              A& p = G % 2 == 0 ? p0[r] : p1[r];
              if constexpr (Fam::kByteFields) p = B::dot(p, f, B::pair(h + Fam::pair(G)));
              else p = B::dot_pair(p, f, h + Fam::pair(G));
            }
          };
          (one.template operator()<F>(), ...);
        };
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
          reg.template operator()<0>(r, std::make_integer_sequence<int, Fam::kFields>());
          if constexpr (Fam::kRegs == 2) reg.template operator()<1>(r, std::make_integer_sequence<int, Fam::kFields>());
        }
      } else {
        // Field by field over the rows, so only one field's pairs are live: all four fields' would take 8 (or
        // 16 / 32 at 4 tokens) registers and push partials onto the stack. Each field reloads the codes from L1.
        [&]<int... K>(std::integer_sequence<int, K...>) {
          (
              [&] {
#pragma GCC unroll 16
                for (int r = 0; r < R; ++r) field.template operator()<K>(r);
              }(),
              ...);
        }(std::make_integer_sequence<int, Fam::kFields>());
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      wp[r] += steps * kStep;
      const A sv = Fam::kByteFields ? B::mul(B::scales16(w.block_scales(b0 + r, g)), B::set1(kUnit)) : B::scales16(w.block_scales(b0 + r, g));
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) out[r * T + t] = B::fma(B::add(p0[r * T + t], p1[r * T + t]), sv, out[r * T + t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    const int valid = static_cast<int>(std::min<int64_t>(16, w.rows - 16 * (b0 + r)));
    for (int t = 0; t < T; ++t) B::store(y + (t0 + t) * w.rows + 16 * (b0 + r), out[r * T + t], valid);
  }
}

// Tokens t0 .. t0+T-1 over blocks b0 .. b1-1: 2-block tiles, a last odd block alone.
template <class Fam, int T, bool Split, bool Sym>
void blocks(const BlockedCodes& w, int64_t b0, int64_t b1, const PairActs& a, int64_t t0, float* y) {
  int64_t b = b0;
  for (; b + 2 <= b1; b += 2) tile<Fam, 2, T, Split, Sym>(w, b, a, t0, y);
  if (b < b1) tile<Fam, 1, T, Split, Sym>(w, b, a, t0, y);
}

// int8 with many tokens: the block tile above runs each byte as two nibbles (a 256-entry table does not fit a
// register), so every weight costs two dots per activation half, four per weight with the split: compute-bound
// at batch 64 it ran 1.09x Eigen fp32 (int4, one dot per half, 2.11x), and MiniGPT's int8 prefill below fp32.
// From deq_tokens(split) tokens on, an item of 2 blocks is first dequantized to bf16 (u - z, exact: |u - z| <= 255),
// once for all the call's tokens, into a buffer of the thread's (32 KB per block per 1024 columns: 256 KB at 4096,
// L2-resident), and tile_deq then multiplies those words: one dot per weight and activation half, as int4.
// The dequantization is a pass over the codes at memory speed before any dot (~1 ms for 4096x4096 from DRAM,
// Zen 5, 1 thread), so it pays from 8 tokens with the split (4096x4096, one process: 3.03 -> 2.49 ms; at 4 tokens
// 1.55 -> 1.61) and from 16 with one bf16 per activation, whose nibble tile has half the dots to save (8 tokens:
// 2.14 -> 2.08 ms symmetric, 1.69 -> 2.18 asymmetric; 16: 3.96 -> 2.86, 2.94 -> 3.07; 64: 15.5 -> 8.7, 11.6 -> 8.9).
constexpr int64_t deq_tokens(bool split) { return split ? 8 : 16; }

// The dequantized words of R blocks: (block, step, pair k, 32 words), step = 8 columns, lane l's words 2l, 2l + 1
// = columns Int8Family::pair_cols(k) of row 16 b + l: the order of the activation pair words, so pair k multiplies word k.
constexpr int64_t kDeqStepWords = 4 * 32;

template <bool Sym>
void dequant8(const BlockedCodes& w, int64_t b0, int64_t nb, uint16_t* deq) {
  using B = Bf16Dot;
  const int64_t all = w.cols_pad / 8;
  for (int64_t r = 0; r < nb; ++r) {
    const uint8_t* c = w.block_codes(b0 + r);
    uint16_t* d = deq + r * all * kDeqStepWords;
    for (int64_t s = 0; s < all; ++s)
      for (int h = 0; h < 2; ++h) {  // half h: bytes 0 .. 3 = columns 4h .. 4h + 3, pairs 2h (0, 2) and 2h + 1 (1, 3)
        __builtin_prefetch(c + s * 128 + h * 64 + kBlockPrefetchBytes);  // past the end is harmless
        B::W even, odd;
        B::byte_pairs(c + s * 128 + h * 64, even, odd);
        B::put(d + s * kDeqStepWords + (2 * h) * 32, B::ints_bf16<Sym ? 128 : 0>(even));
        B::put(d + s * kDeqStepWords + (2 * h + 1) * 32, B::ints_bf16<Sym ? 128 : 0>(odd));
      }
  }
}

// Blocks b0 .. b0+R-1, dequantized in deq (dequant8), x tokens t0 .. t0+T-1: tile's arithmetic with the fields
// loaded instead of decoded, values u - z instead of (u - z) / 16 (no kUnit). 2 R T partials + R T outputs
// + one weight register (25 of 32 zmm for R = 2, T = 4).
template <int R, int T, bool Split, bool Sym>
void tile_deq(const BlockedCodes& w, int64_t b0, const uint16_t* deq, const PairActs& a, int64_t t0, float* y) {
  using B = Bf16Dot;
  using W = B::W;
  using A = B::A;
  const int64_t steps = w.group_k / 8, all = w.cols_pad / 8;
  A out[R * T];
#pragma GCC unroll 16
  for (int i = 0; i < R * T; ++i) out[i] = B::zero();
  for (int64_t g = 0; g < w.groups; ++g) {
    A p0[R * T], p1[R * T];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        p1[r * T + t] = B::zero();
        if constexpr (Sym) p0[r * T + t] = B::zero();
        else p0[r * T + t] = B::mul(B::zeros16(w.block_zeros(b0 + r, g)), B::set1(-a.sum[(t0 + t) * w.groups + g]));
      }
    const uint32_t* hi = a.hi.data() + t0 * a.ld + g * steps * 4;
    const uint32_t* lo = Split ? a.lo.data() + t0 * a.ld + g * steps * 4 : nullptr;
    const uint16_t* dg = deq + g * steps * kDeqStepWords;
    for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k)
#pragma GCC unroll 2
        for (int r = 0; r < R; ++r) {
          const W f = B::load(dg + (r * all + s) * kDeqStepWords + k * 32);
#pragma GCC unroll 8
          for (int t = 0; t < T; ++t) {
            const int i = r * T + t;
            if constexpr (Split) {
              p0[i] = B::dot(p0[i], f, B::pair(hi + t * a.ld + 4 * s + k));
              p1[i] = B::dot(p1[i], f, B::pair(lo + t * a.ld + 4 * s + k));
            } else if (k % 2 == 0) {
              p0[i] = B::dot(p0[i], f, B::pair(hi + t * a.ld + 4 * s + k));
            } else {
              p1[i] = B::dot(p1[i], f, B::pair(hi + t * a.ld + 4 * s + k));
            }
          }
        }
    }
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r) {
      const A sv = B::scales16(w.block_scales(b0 + r, g));
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) out[r * T + t] = B::fma(B::add(p0[r * T + t], p1[r * T + t]), sv, out[r * T + t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    const int valid = static_cast<int>(std::min<int64_t>(16, w.rows - 16 * (b0 + r)));
    for (int t = 0; t < T; ++t) B::store(y + (t0 + t) * w.rows + 16 * (b0 + r), out[r * T + t], valid);
  }
}

// The calling thread's dequantization buffer of at least `words` (each OpenMP worker calls it for its own).
uint16_t* deq_buffer(int64_t words) {
  thread_local mq::AlignedVector<uint16_t> buffer;
  if (static_cast<int64_t>(buffer.size()) < words) buffer.resize(static_cast<size_t>(words));
  return buffer.data();
}

// int8, n >= deq_tokens(Split): items of 2 blocks, each dequantized once, then every token tile over it.
template <bool Split, bool Sym>
void run_deq(const BlockedCodes& w, const PairActs& a, float* y, int threads) {
  constexpr int64_t kItem = 2;
  const int64_t items = (w.blocks + kItem - 1) / kItem;
  const auto tokens = [&]<int R>(int64_t b0, const uint16_t* deq) {
    int64_t t0 = 0;
    for (; t0 + 4 <= a.n; t0 += 4) tile_deq<R, 4, Split, Sym>(w, b0, deq, a, t0, y);
    if (a.n - t0 == 3) tile_deq<R, 3, Split, Sym>(w, b0, deq, a, t0, y);
    if (a.n - t0 == 2) tile_deq<R, 2, Split, Sym>(w, b0, deq, a, t0, y);
    if (a.n - t0 == 1) tile_deq<R, 1, Split, Sym>(w, b0, deq, a, t0, y);
  };
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t it = 0; it < items; ++it) {
    const int64_t b0 = it * kItem, nb = std::min(kItem, w.blocks - b0);
    uint16_t* deq = deq_buffer(kItem * (w.cols_pad / 8) * kDeqStepWords);
    dequant8<Sym>(w, b0, nb, deq);
    if (nb == 2) tokens.template operator()<2>(b0, deq);
    else tokens.template operator()<1>(b0, deq);
  }
}

template <class Fam, bool Split, bool Sym>
void run_isa(const BlockedCodes& w, const PairActs& a, float* y, int threads) {
  // One token: 8 blocks (128 rows) per work item, one tile. Several: 8 blocks per item too, in 2-block x 4-token
  // tiles, token tiles outside: a tile's activations (64 KB for 4 tokens at 4096 columns with the split) stay in
  // L1/L2 while the item's four block pairs pass over them, and the item's codes (256 / 512 KB for int4 / int8 at
  // 4096 columns) stay in L2 for the next token tile. With 2-block items and the token tiles inside, 64 tokens'
  // activations (1 MB) were re-read from L3 for every item: 4096x4096 int8-per-channel at 64 tokens ran 0.86x Eigen
  // fp32 on 2 threads (1.27x on 1).
  if constexpr (Fam::kByteFields)
    if (a.n >= deq_tokens(Split)) return run_deq<Split, Sym>(w, a, y, threads);
  constexpr int64_t kItem = 8;
  const int64_t items = (w.blocks + kItem - 1) / kItem;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t it = 0; it < items; ++it) {
    const int64_t b0 = it * kItem, b1 = std::min(w.blocks, b0 + kItem);
    const auto one_token = [&](int64_t t) {
      if (b1 - b0 == kItem) tile<Fam, kItem, 1, Split, Sym>(w, b0, a, t, y);
      else for (int64_t b = b0; b < b1; ++b) tile<Fam, 1, 1, Split, Sym>(w, b, a, t, y);
    };
    if (a.n == 1) {
      one_token(0);
      continue;
    }
    int64_t t0 = 0;
    for (; t0 + 4 <= a.n; t0 += 4) blocks<Fam, 4, Split, Sym>(w, b0, b1, a, t0, y);
    if (a.n - t0 == 3) {
      blocks<Fam, 3, Split, Sym>(w, b0, b1, a, t0, y);
      continue;
    }
    if constexpr (Split) {
      // Weight-only, one or two tokens left: each through the one-token tile (8 blocks, 16 dot chains of each half)
      // rather than 2-block tiles of those tokens (8 chains). Measured on Zen 5 at 4096x4096 (bench/HISTORY.md,
      // "Weight-only remainder tokens"): 2 tokens 1.26x-1.43x faster (int3 1.02x-1.05x), 5 tokens 1.11x-1.36x, 6
      // tokens 1.02x-1.13x, the same bits. Not for +bf16 (one dot per pair, no split): there it made 2 tokens
      // 1.13x-1.53x slower.
      for (; t0 < a.n; ++t0) one_token(t0);
    } else {
      if (a.n - t0 == 2) blocks<Fam, 2, Split, Sym>(w, b0, b1, a, t0, y);
      if (a.n - t0 == 1) blocks<Fam, 1, Split, Sym>(w, b0, b1, a, t0, y);
    }
  }
}
#endif

}  // namespace
}  // namespace kdetail

namespace kdetail {
namespace {
// The family's blocks16 row (Fam: its family, int_families.h) in weight-only and +bf16 mode.
template <class Fam>
// Reached only through the row, whose modes are weight-only and +bf16 (gemm_blocked_bf16 refuses the dynamic ones).
void tile_rows(const BlockedCodes& w, const float* x, int64_t n, float* y, int threads, ActMode act, bool use_isa) {
  if (empty_product(w.rows, w.cols, n, y, "gemm_blocked_bf16")) return;
  const int nt = effective_threads(threads, w.rows * w.cols * n);
  const bool split = act == ActMode::weight_only;
  const bool raw = !bf16_safe(x, n * w.cols);  // NaN / Inf / huge: fp32 on x as it is
  const bool isa = use_isa && bf16_dot_built<Fam>() && !raw;  // else the twin runs
  const PairActs& a = make_acts<Fam>(w, x, n, split, raw, isa);
#if defined(__AVX512BF16__) && defined(__AVX512BW__)
  if constexpr (bf16_dot_built<Fam>()) {
    if (isa) {
      if (w.scheme.symmetric) return split ? run_isa<Fam, true, true>(w, a, y, nt) : run_isa<Fam, false, true>(w, a, y, nt);
      return split ? run_isa<Fam, true, false>(w, a, y, nt) : run_isa<Fam, false, false>(w, a, y, nt);
    }
  }
#endif
  twin<Fam>(w, a, y, nt);
}

template <class Fam>
bool tile_on(const QTensor& w) { return bf16_dot_built<Fam>() && blockable(w); }
}  // namespace
}  // namespace kdetail

void gemm_blocked_bf16(const BlockedCodes& w, const float* x, int64_t n, float* y, int threads, bool use_isa, ActMode act) {
  if (is_dynamic(act)) throw UsageError("gemm_blocked_bf16: runs weight-only and +bf16, not the dynamic modes");
  block_row(w.scheme, act).blocks(w, x, n, y, threads, act, use_isa);
}

std::vector<KernelRow> kernel_rows_blocked_bf16() {
  // Where the tile is built the block layout is faster than the row-major kernels (bench/HISTORY.md, 2026-11-26).
  // One row per family, the family a template argument (the map prints them merged).
  const auto row = []<class Fam>() {
    return KernelRow{families_of({Fam::kName}), act_bit(ActMode::weight_only) | act_bit(ActMode::bf16), Layout::blocks16, Acts::any, true,
                     kdetail::tile_on<Fam>, nullptr, kdetail::tile_rows<Fam>, "AVX-512 BF16 (int3: + VBMI)",
                     "`gemm_blocked_bf16`: a row's dot in one lane, `vdpbf16ps` chains (`blocked_bf16.cpp`)",
                     "`twin` in the same file", "`test_blocked`"};
  };
  return {row.template operator()<Int8Family>(), row.template operator()<Int4Family>(), row.template operator()<Int3Family>(),
          row.template operator()<Int2Family>()};
}

}  // namespace mq

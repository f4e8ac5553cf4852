// Weight-only kernel core, part 3 of 4: the tiles, the inner loops over one row's blocks. rows_tile (one
// token, R rows), pair_tile (T tokens, two rows), bf16_tile (the bf16-dot decoders' one tile for both), row_dot
// (one token, one leftover row); finish_tile adds each row's scalar tail.
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>

#include "miniquant/kernels/word_plan.h"

namespace mq::kdetail {

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
    typename B::template Block<D::kSpread> w[NB][R];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j)
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        if constexpr (T == 1)  // every cache line of the block (int3's are 96 bytes: one prefetch left a third uncovered)
#pragma GCC unroll 2
          for (int64_t o = 0; o < D::kBlockBytes; o += 64)
            __builtin_prefetch(stream_ahead<R>(rows[i], (b + j) * D::kBlockBytes + o, kBf16PrefetchBytes, p.rbytes));
        w[j][i] = B::template block<D::kSpread>(rows[i] + (b + j) * D::kBlockBytes);
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

}  // namespace mq::kdetail

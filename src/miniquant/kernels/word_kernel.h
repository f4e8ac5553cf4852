// Weight-only kernel core shared by every family: a row is read as 32-bit words of F fields each,
// fields are decoded in registers (shift, mask, convert) and multiplied against an x that was
// permuted once per call, so no byte-to-float widening (slow in xsimd 8) and no dequantized copy.
//
// Lane layout: one block is L words (L = float lanes). Lane j of a block holds fields j*F .. j*F+F-1,
// so decoding field k of every lane gives elements {j*F + k}; x is permuted once per call into
// xp[b*EB + k*L + j] = x[b*EB + j*F + k] (EB = L*F elements per block) and read contiguously.
// Integer schemes: sum_i (u_i - z) x_i = sum_i u_i x_i - z * sum_i x_i, the second term from
// per-group sums of x computed once per call, so the inner loop never subtracts z.
#pragma once
#include <omp.h>

#include <algorithm>
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

// The table-lookup int4 decoder with DecInt<4>'s scalar tail.
struct DecInt4Fast : DecInt4Perm {
  static float scalar(const uint8_t* row, int64_t c) { return static_cast<float>(field_at(row, c, 4)); }
};

// --- per-call plan: permuted x, per-group sums of x ---

struct Plan {
  int64_t rows = 0, cols = 0, n = 0;
  int64_t EB = 0;   // elements per block (L * F)
  int64_t nb = 0;   // whole blocks per row; the rest of a row is a scalar tail
  int64_t ldx = 0;  // stride of one token in xp
  int64_t g = 0;    // group width in elements (cols for float kinds, per-channel, per-tensor)
  int64_t gpr = 0;  // groups per row
  const float* x = nullptr;  // (n, cols) the caller's activations, for tails
  AlignedVector<float> xp;   // (n, nb * EB) permuted activations, 64-byte aligned like the codes
  std::vector<float> xg;     // (gpr, n) per-group sums of x (integer schemes)
  std::vector<int32_t> block_group;  // (nb) group of each block when one group spans it (no division in the loop)
};

inline Plan make_plan(const QTensor& w, const float* x, int64_t n, int F, bool scaled, bool contiguous) {
  Plan p;
  p.rows = w.rows;
  p.cols = w.cols;
  p.n = n;
  p.EB = L * F;
  p.nb = w.cols / p.EB;
  p.ldx = p.nb * p.EB;
  p.x = x;
  p.g = scaled ? w.scheme.group_width(w.cols) : w.cols;
  p.gpr = scaled ? w.scheme.groups_per_row(w.cols) : 1;
  p.xp.resize(static_cast<size_t>(n * p.ldx));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t b = 0; b < p.nb; ++b)
      for (int64_t k = 0; k < F; ++k)
        for (int64_t j = 0; j < L; ++j)
          p.xp[t * p.ldx + b * p.EB + k * L + j] = x[t * w.cols + b * p.EB + (contiguous ? k * L + j : j * F + k)];
  p.block_group.resize(static_cast<size_t>(p.nb));
  for (int64_t b = 0; b < p.nb; ++b) p.block_group[b] = static_cast<int32_t>(p.g > 0 ? (b * p.EB) / p.g : 0);
  if (scaled) {
    p.xg.assign(static_cast<size_t>(p.gpr * n), 0.0f);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t gi = 0; gi < p.gpr; ++gi) {
        double s = 0.0;  // exact enough that the z * sum(x) correction adds no error of its own order
        for (int64_t c = gi * p.g; c < (gi + 1) * p.g; ++c) s += x[t * w.cols + c];
        p.xg[gi * n + t] = static_cast<float>(s);
      }
  }
  return p;
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

template <class D, int... K>
inline void decode_all(const ubatch& w, fbatch* f, std::integer_sequence<int, K...>) {
  ((f[K] = D::template field<K>(w)), ...);
}

// One block b of a row into the accumulators acc[t * kSplit + Slot] (Slot a compile-time constant,
// so the accumulators stay in registers). Every loop over tokens and fields is unrolled (pragmas):
// otherwise gcc keeps the decoded fields and the accumulators in stack arrays.
template <class D, int T, int M, int kSplit, int Slot>
inline void block_into(const uint8_t* row, const float* sf, const Plan& p, const float* xb, int64_t b, fbatch* acc) {
  constexpr int F = D::F;
  const ubatch w = ubatch::load_unaligned(reinterpret_cast<const uint32_t*>(row + b * L * 4));
  fbatch f[F];
  decode_all<D>(w, f, std::make_integer_sequence<int, F>());
  const float* xk = xb + b * p.EB;
  if constexpr (D::kScaled) {
    // One token: the block's fields go to up to 4 independent partial sums (a single chain of
    // dependent FMAs, 4 cycles each, is what narrow rows could not hide).
    constexpr int kPart = T == 1 ? (F >= 4 ? 4 : F) : T;
    fbatch part[kPart];
#pragma GCC unroll 16
    for (int i = 0; i < kPart; ++i) part[i] = fbatch(0.0f);
    if constexpr (T == 1) {
#pragma GCC unroll 16
      for (int k = 0; k < F; ++k) part[k % kPart] = xsimd::fma(f[k], fbatch::load_unaligned(xk + k * L), part[k % kPart]);
      fbatch sum = part[0];
#pragma GCC unroll 16
      for (int i = 1; i < kPart; ++i) sum += part[i];
      acc[Slot] = xsimd::fma(sum, lane_scales<M>(sf, p, b), acc[Slot]);
    } else {
#pragma GCC unroll 16
      for (int k = 0; k < F; ++k)
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) part[t] = xsimd::fma(f[k], fbatch::load_unaligned(xk + t * p.ldx + k * L), part[t]);
      const fbatch sv = lane_scales<M>(sf, p, b);
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) acc[t * kSplit + Slot] = xsimd::fma(part[t], sv, acc[t * kSplit + Slot]);
    }
  } else {
#pragma GCC unroll 16
    for (int k = 0; k < F; ++k)
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t)
        acc[t * kSplit + Slot] = xsimd::fma(f[k], fbatch::load_unaligned(xk + t * p.ldx + k * L), acc[t * kSplit + Slot]);
  }
}

template <class D, int T, int M, int kSplit, int... S>
inline void blocks_into(const uint8_t* row, const float* sf, const Plan& p, const float* xb, int64_t b, fbatch* acc,
                        std::integer_sequence<int, S...>) {
  (block_into<D, T, M, kSplit, S>(row, sf, p, xb, b + S, acc), ...);
}

// out[t] (t < T) = sum over row of s_g * u * x[t0 + t] (integer) or w * x[t0 + t] (float), without
// the zero-point correction. row: packed codes of one row; sf: its group scales (float, padded).
template <class D, int T, int M>
inline void row_tile(const uint8_t* row, const float* sf, const Plan& p, int64_t t0, float* out) {
  // One token: consecutive blocks rotate over kSplit accumulators so the accumulation chain does
  // not serialize the blocks (fp32 has one FMA per block). Token tiles are independent chains already.
  constexpr int kSplit = T == 1 ? 4 : 1;
  fbatch acc[T * kSplit];
#pragma GCC unroll 32
  for (int i = 0; i < T * kSplit; ++i) acc[i] = fbatch(0.0f);
  const float* xb = p.xp.data() + t0 * p.ldx;
  int64_t b = 0;
  for (; b + kSplit <= p.nb; b += kSplit)
    blocks_into<D, T, M, kSplit>(row, sf, p, xb, b, acc, std::make_integer_sequence<int, kSplit>());
  for (; b < p.nb; ++b) block_into<D, T, M, kSplit, 0>(row, sf, p, xb, b, acc);
  for (int t = 0; t < T; ++t) {
    float tail = 0.0f;
    const float* xt = p.x + (t0 + t) * p.cols;
    for (int64_t c = p.nb * p.EB; c < p.cols; ++c) {
      const float v = D::scalar(row, c) * xt[c];
      tail += D::kScaled ? sf[c / p.g] * v : v;
    }
    fbatch a = acc[t * kSplit];
#pragma GCC unroll 4
    for (int i = 1; i < kSplit; ++i) a += acc[t * kSplit + i];
    out[t] = xsimd::hadd(a) + tail;
  }
}

// Decode reads R rows as R separate streams; prefetching this far ahead of each (in bytes) keeps the
// weights arriving where the hardware prefetcher alone falls behind. Measured on one thread at
// 4096x4096: fp16 1523 -> 1160 us, bf16 1377 -> 996 us, fp32 2066 -> 1834 us (2048 bytes: no better).
inline constexpr int64_t kRowPrefetchBytes = 1024;

// One token, R rows at once (decode): each block's activations are loaded once for all R rows, and
// the per-row work outside the block loop (scales, horizontal sums) is spread over R rows' worth of
// blocks. Every row keeps two partial sums per block and one scaled accumulator, 3R independent
// chains, enough to hide the FMA latency. out[i] = row i's sum without the zero-point correction.
template <class D, int M, int R>
inline void rows_tile(const uint8_t* const* rows, const float* const* sf, const Plan& p, float* out) {
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
      __builtin_prefetch(rows[i] + b * L * 4 + kRowPrefetchBytes);  // past the row's end is harmless
      const ubatch w = ubatch::load_unaligned(reinterpret_cast<const uint32_t*>(rows[i] + b * L * 4));
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
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) {
    float tail = 0.0f;
    for (int64_t c = p.nb * p.EB; c < p.cols; ++c) {
      const float v = D::scalar(rows[i], c) * p.x[c];
      tail += D::kScaled ? sf[i][c / p.g] * v : v;
    }
    out[i] = xsimd::hadd(acc[i]) + tail;
  }
}

// Row r's group scales as floats (sf) and s_g * z_g (sz, exact: an 11-bit fp16 significand times an
// integer below 256). sf, sz: (gpr).
inline void row_scales(const QTensor& w, int64_t r, int64_t gpr, int zero_sym, float* sf, float* sz) {
  const bool per_tensor = w.scheme.group == kPerTensor;
  for (int64_t gi = 0; gi < gpr; ++gi) {
    const int64_t si = per_tensor ? 0 : r * gpr + gi;
    sf[gi] = f16_to_f32(w.scales[si]);
    const int z = w.scheme.symmetric ? zero_sym : field_at(w.zeros.data(), si, w.scheme.bits);
    sz[gi] = sf[gi] * static_cast<float>(z);
  }
}

// corr[t] = sum_g sz[g] * xg[g * n + t]. One token: four partial sums, so the row's correction is not
// one chain of gpr dependent FMAs (it was the bottleneck of small-group GEMV); several tokens are
// independent sums already. sz: (gpr); xg: (gpr, n); corr: (n).
inline void zero_terms(const float* sz, const float* xg, int64_t gpr, int64_t n, float* corr) {
  if (n == 1) {
    float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int64_t g = 0;
    for (; g + 4 <= gpr; g += 4)
      for (int i = 0; i < 4; ++i) a[i] += sz[g + i] * xg[g + i];
    for (; g < gpr; ++g) a[0] += sz[g] * xg[g];
    corr[0] = (a[0] + a[1]) + (a[2] + a[3]);
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

// Runs the whole product y (n, rows) with decoder D. Unpack > 0: rows are first unpacked from
// `Unpack`-bit fields into bytes (one row of scratch), then decoded as 8-bit fields (the general
// bit-stream path).
template <class D, int M, int Unpack = 0>
void run(const QTensor& w, const float* x, int64_t n, float* y, int threads) {
  const Plan p = make_plan(w, x, n, D::F, D::kScaled, D::kContiguous);
  const int64_t rbytes = Unpack ? w.cols : w.row_bytes();
  const int nt = effective_threads(threads, w.rows * w.cols * n);
  // Row chunks of at most ~256 KB of codes stay in L2 while every token tile streams over them.
  const int64_t rc = std::clamp<int64_t>((256 << 10) / std::max<int64_t>(rbytes, 1), 1,
                                         std::max<int64_t>(1, (w.rows + nt - 1) / nt));
  const int64_t nchunks = (w.rows + rc - 1) / rc;
  const int zero_sym = 1 << (w.scheme.bits - 1);
#pragma omp parallel num_threads(nt)
  {
    // Per-thread scratch, each buffer on cache lines of its own: two threads writing to one line
    // (small buffers from one malloc arena) made decode speed vary 2x from run to run.
    constexpr int R = 4;  // decode: rows per tile
    AlignedVector<float> sf(static_cast<size_t>(R * (p.gpr + L)), 0.0f);  // R rows' scales, each padded for lane_scales
    AlignedVector<float> corr(static_cast<size_t>(std::max<int64_t>(n, R)), 0.0f);  // zero-point correction per token (or row)
    AlignedVector<float> sz(static_cast<size_t>(p.gpr), 0.0f);        // (gpr) s_g * z_g of one row
    AlignedBytes unpacked(Unpack ? static_cast<size_t>(R * (w.cols + 4 * L)) : 0);
    AlignedVector<float> out(16);
    // Row r's codes as the decoder reads them (unpacked into scratch slot i for the bit-stream path).
    const auto row_of = [&](int64_t r, int i) {
      const uint8_t* row = w.row_codes(r);
      if constexpr (Unpack > 0) {
        uint8_t* u = unpacked.data() + i * (w.cols + 4 * L);
        unpack_fields(row, w.cols, Unpack, u);
        row = u;
      }
      return row;
    };
#pragma omp for schedule(static)
    for (int64_t ch = 0; ch < nchunks; ++ch) {
      const int64_t r_end = std::min(w.rows, (ch + 1) * rc);
      int64_t r = ch * rc;
      if (n == 1) {
        for (; r + R <= r_end; r += R) {
          const uint8_t* rows[R];
          const float* sfs[R];
          for (int i = 0; i < R; ++i) {
            rows[i] = row_of(r + i, i);
            sfs[i] = sf.data() + i * (p.gpr + L);
            corr[i] = 0.0f;
            if constexpr (D::kScaled) {
              row_scales(w, r + i, p.gpr, zero_sym, sf.data() + i * (p.gpr + L), sz.data());
              zero_terms(sz.data(), p.xg.data(), p.gpr, 1, &corr[i]);
            }
          }
          rows_tile<D, M, R>(rows, sfs, p, out.data());
          for (int i = 0; i < R; ++i) y[r + i] = out[i] - corr[i];
        }
      }
      for (; r < r_end; ++r) {
        const uint8_t* row = row_of(r, 0);
        if constexpr (D::kScaled) {
          row_scales(w, r, p.gpr, zero_sym, sf.data(), sz.data());
          zero_terms(sz.data(), p.xg.data(), p.gpr, n, corr.data());
        }
        int64_t t0 = 0;
        for (; t0 + 8 <= n; t0 += 8) {
          row_tile<D, 8, M>(row, sf.data(), p, t0, out.data());
          for (int t = 0; t < 8; ++t) y[(t0 + t) * w.rows + r] = out[t] - corr[t0 + t];
        }
        for (; t0 < n; ++t0) {
          row_tile<D, 1, M>(row, sf.data(), p, t0, out.data());
          y[t0 * w.rows + r] = out[0] - corr[t0];
        }
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
template <class D, int Unpack = 0>
void run_any(const QTensor& w, const float* x, int64_t n, float* y, int threads) {
  switch (D::kScaled ? groups_per_block(w, D::F) : 0) {
    case 0: return run<D, 0, Unpack>(w, x, n, y, threads);
    case 2: return run<D, 2, Unpack>(w, x, n, y, threads);
    case 4: return run<D, 4, Unpack>(w, x, n, y, threads);
    case 8: return run<D, 8, Unpack>(w, x, n, y, threads);
    case 16: return run<D, 16, Unpack>(w, x, n, y, threads);
    default: return gemm_scalar(w, x, n, y, threads);
  }
}

}  // namespace mq::kdetail

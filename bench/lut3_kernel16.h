// The int3 lookup-table kernel with 16-bit tables (bench-only; vs_ggml's pair q3_K / int3-g64-table16): T-MAC's
// bit-plane decomposition (Wei et al., 2024) on lut_kernel16.h's machinery, for symmetric int3 (zero-point 4).
//
// - Planes. A code u = lo + 4 hi (lo = u & 3, hi = u >> 2) stands for v = u - 4 = lo + 4 (hi - 1). The 2-bit plane
//   looks up lut_kernel16.h's pair tables, entry (i & 3) x0 + (i >> 2) x1; the 1-bit plane looks up one table per
//   four columns (a quad), entry -4 sum of the x_j whose bit j of i is 0. So a weight of 0 (u = 4: lo 0, hi 1) adds
//   nothing through either plane, and both index-0 lo entries and all-ones hi entries are exactly 0. The two
//   planes' int16 codes go into one int32 sum per group, as in lut_kernel16.h.
// - Layout (pack_planes3): the int3 block layout's 96 bytes per block and 16 columns, rearranged per 32 columns (a
//   double step, 192 bytes) into bit planes: bytes 0-63 the lo fields of columns 0-15 in Int2Family's step layout,
//   64-127 those of columns 16-31, 128-191 the hi bits, lane l's 32-bit word at 128 + 4 l: its low half holds
//   columns 0-7 (bits 0-7) and 16-23 (bits 8-15), its high half columns 8-15 and 24-31. So every word is read as
//   lut_kernel16.h reads an int2 step: iteration k takes bits 4k .. 4k + 3 of each half (one shift, one
//   vpternlogd that also sets bit 4 in the high halves), one vpermw through a register of two 16-entry tables,
//   one vpdpwssd into the lane's int32 sum. Per 512 weights of a block: 12 such iterations (8 lo, 4 hi), where the
//   int2 kernel takes 8: the cost per weight grows with the bit width, as T-MAC reports.
// - Tables: per token and double step, 12 registers of 32 int16 entries (768 bytes per 32 columns, 96 KB for a
//   4096-column token): registers 0-3 the first 16 columns' pairs (register k: pair k, then pair k + 4), 4-7 the next
//   16 columns' pairs, 8-11 the quads (register k: quad 4 (k >> 1) + (k & 1), then that quad + 2). Each group's
//   entries, lo and hi, share one step s_g = (largest |entry|) / 32767, rounded to nearest even.
// - Bound: a lookup's entry is within 0.5 s_g of its exact value; a lookup that is not exactly 0 has a weight v != 0
//   among its columns (a lo index != 0 has lo != 0, so v is not 0; a hi index with a 0 bit has v = lo - 4 < 0), and
//   each column is in one pair and one quad, so the result is W x within sum_j |w_j| s_g: twice lut_kernel16.h's
//   slack per activation (vs_ggml's check holds this kernel to it; tests/test_lut_kernels.cpp too).
// The portable twin looks up the same indices word by word and sums in int32: the two agree bit for bit.
//
//   pack_planes3(w)                              the planes of an int3 symmetric BlockedCodes (scales unchanged)
//   gemm_lut3_16(p, x, n, y, threads, use_isa)   y (n, rows) = W x, x (n, cols); p from pack_planes3
//   pack_table16, gemm_table16, table16_slack    int2's or int3's 16-bit tables by the scheme's family
#pragma once
#include <cstring>
#include <string>

#include "lut_kernel16.h"
#include "miniquant/error.h"
#include "miniquant/format_table.h"

namespace mqbench::lut {

constexpr int64_t kPlaneCols = 32;     // columns per double step
constexpr int64_t kPlaneBytes = 192;   // bytes per block and double step: 3 bits x 32 columns x 16 lanes / 8
constexpr int64_t kPlaneRegs = 12;     // table registers per double step (8 pair, 4 quad)

// Word w's iteration k index bits: both halves shifted by 4k, low 4 bits kept, bit 4 set in the high half.
inline int plane_index(uint32_t word, int k, int half) { return static_cast<int>((word >> (16 * half + 4 * k)) & 15u) + 16 * half; }

inline void check_planes3(const BlockedCodes& w) {
  if (mq::traits_of(w.scheme).family != mq::Int3Family::kName || !w.scheme.symmetric || w.zero_sym != 4 ||
      w.group_k % kPlaneCols != 0 || w.cols_pad % kPlaneCols != 0)
    throw mq::UsageError("lut3: " + w.name + ": the int3 table kernel takes symmetric int3 with groups of a multiple of 32 columns");
}

// The bit planes of w (int3, symmetric): the same bytes per block, rearranged (layout above).
inline BlockedCodes pack_planes3(const BlockedCodes& w) {
  check_planes3(w);
  BlockedCodes p = w;
  std::fill(p.codes.begin(), p.codes.end(), uint8_t{0});
  for (int64_t b = 0; b < w.blocks; ++b) {
    const uint8_t* src = w.block_codes(b);
    uint8_t* dst = p.codes.data() + (w.block_codes(b) - w.codes.data());
    for (int l = 0; l < 16; ++l)
      for (int64_t c = 0; c < w.cols_pad; ++c) {
        const int u = mq::block_field(src, mq::Int3Family::slot(l, c), 3);
        uint8_t* d = dst + (c / kPlaneCols) * kPlaneBytes;
        const int cc = static_cast<int>(c % kPlaneCols), st = cc / 16, c16 = cc % 16;
        mq::put_block_field(d + st * 64, mq::Int2Family::slot(l, c16), 2, u & 3);
        const int bit = 16 * (c16 / 8) + c16 % 8 + 8 * st;  // in lane l's hi word
        d[128 + 4 * l + bit / 8] = static_cast<uint8_t>(d[128 + 4 * l + bit / 8] | ((u >> 2) << (bit % 8)));
      }
  }
  return p;
}

// One call's tables. tab: (n, double steps, 12, 32) int16 (register order above); scale: (n, groups) s_g.
struct Lut3Acts {
  int64_t n = 0, dsteps = 0;
  mq::AlignedVector<int16_t> tab;
  std::vector<float> scale;
};

// GCC 12 warns inside its own AVX-512 headers (`__Y = __Y` in _mm512_max_ps and the reductions) where this
// function inlines them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
// The float entries of one double step from column c0 of token xt (zero past cols) into out (12, 32); returns their
// largest |entry|. Lo entry i: fma(i >> 2, x1, (i & 3) x0); hi entry i: a chain of fma((bit j of i) ? 0 : -4, x_j, .)
// from 0 over j = 0 .. 3: the same operations in AVX-512 and in the loops.
inline float fill_planes3(const float* xt, int64_t cols, int64_t c0, float* out) {
  const auto xa = [&](int64_t c) { return c < cols ? xt[c] : 0.0f; };
  float mx = 0.0f;
#if defined(__AVX512F__)
  alignas(64) float lo0[16], lo1[16], hq[4][16];
  for (int i = 0; i < 16; ++i) {
    lo0[i] = static_cast<float>(i & 3);
    lo1[i] = static_cast<float>(i >> 2);
    for (int j = 0; j < 4; ++j) hq[j][i] = (i >> j) & 1 ? 0.0f : -4.0f;
  }
  const __m512 v0 = _mm512_load_ps(lo0), v1 = _mm512_load_ps(lo1);
  __m512 vm = _mm512_setzero_ps();
#endif
  for (int r = 0; r < kPlaneRegs; ++r)
    for (int half = 0; half < 2; ++half) {
      float* e = out + 32 * r + 16 * half;
      if (r < 8) {  // pair (r & 3) + 4 half of the double step's 16-column step r >> 2
        const int64_t c = c0 + 16 * (r >> 2) + 2 * ((r & 3) + 4 * half);
        const float x0 = xa(c), x1 = xa(c + 1);
#if defined(__AVX512F__)
        const __m512 v = _mm512_fmadd_ps(v1, _mm512_set1_ps(x1), _mm512_mul_ps(v0, _mm512_set1_ps(x0)));
        _mm512_storeu_ps(e, v);
        vm = _mm512_max_ps(vm, _mm512_abs_ps(v));
#else
        for (int i = 0; i < 16; ++i) e[i] = std::fma(static_cast<float>(i >> 2), x1, static_cast<float>(i & 3) * x0);
#endif
      } else {  // quad 4 (k >> 1) + (k & 1) + 2 half
        const int k = r - 8;
        const int64_t c = c0 + 4 * (4 * (k >> 1) + (k & 1) + 2 * half);
        const float x[4] = {xa(c), xa(c + 1), xa(c + 2), xa(c + 3)};
#if defined(__AVX512F__)
        __m512 v = _mm512_setzero_ps();
        for (int j = 0; j < 4; ++j) v = _mm512_fmadd_ps(_mm512_load_ps(hq[j]), _mm512_set1_ps(x[j]), v);
        _mm512_storeu_ps(e, v);
        vm = _mm512_max_ps(vm, _mm512_abs_ps(v));
#else
        for (int i = 0; i < 16; ++i) {
          float s = 0.0f;
          for (int j = 0; j < 4; ++j) s = std::fma((i >> j) & 1 ? 0.0f : -4.0f, x[j], s);
          e[i] = s;
        }
#endif
      }
#if !defined(__AVX512F__)
      for (int i = 0; i < 16; ++i) mx = std::max(mx, std::fabs(e[i]));
#endif
    }
#if defined(__AVX512F__)
  mx = _mm512_reduce_max_ps(vm);
#endif
  return mx;
}
#pragma GCC diagnostic pop

// The calling thread's tables for x (n, cols), kept between calls.
inline const Lut3Acts& make_tables3(const BlockedCodes& w, const float* x, int64_t n) {
  thread_local Lut3Acts a;
  thread_local std::vector<float> tf;  // one group's float entries (double steps, 12, 32)
  a.n = n;
  a.dsteps = w.cols_pad / kPlaneCols;
  const int64_t dpg = w.group_k / kPlaneCols;  // double steps per group
  const int64_t per = kPlaneRegs * 32;         // entries per double step
  a.tab.assign(static_cast<size_t>(n * a.dsteps * per), 0);
  a.scale.assign(static_cast<size_t>(n * w.groups), 0.0f);
  tf.resize(static_cast<size_t>(dpg * per));
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x + t * w.cols;
    for (int64_t g = 0; g < w.groups; ++g) {
      float mx = 0.0f;
      for (int64_t d = 0; d < dpg; ++d) mx = std::max(mx, fill_planes3(xt, w.cols, (g * dpg + d) * kPlaneCols, tf.data() + d * per));
      const float inv = mx > 0.0f ? 32767.0f / mx : 0.0f;
      a.scale[static_cast<size_t>(t * w.groups + g)] = mx / 32767.0f;
      int16_t* dst = a.tab.data() + (t * a.dsteps + g * dpg) * per;
      int64_t i = 0;
#if defined(__AVX512F__)
      // cvtps rounds to nearest even, as lrint in the default rounding mode: the same codes either way.
      for (; i < dpg * per; i += 16)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                            _mm512_cvtepi32_epi16(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(tf.data() + i), _mm512_set1_ps(inv)))));
#endif
      for (; i < dpg * per; ++i) dst[i] = static_cast<int16_t>(std::lrint(tf[static_cast<size_t>(i)] * inv));
    }
  }
  return a;
}

// The portable twin: each lane's words, the same indices, the same int32 sums, the same float steps after them.
inline void lut3_twin(const BlockedCodes& p, const Lut3Acts& a, float* y, int threads) {
  const int64_t dpg = p.group_k / kPlaneCols, per = kPlaneRegs * 32;
  mq::for_each_block_output(p, a.n, y, threads, [&](int64_t b, int64_t t, int l) {
    const uint8_t* codes = p.block_codes(b);
    float out = 0.0f;
    for (int64_t g = 0; g < p.groups; ++g) {
      int32_t acc = 0;
      for (int64_t d = 0; d < dpg; ++d) {
        const int16_t* ts = a.tab.data() + (t * a.dsteps + g * dpg + d) * per;
        const uint8_t* dc = codes + (g * dpg + d) * kPlaneBytes;
        for (int part = 0; part < 3; ++part) {  // lo of columns 0-15, lo of 16-31, hi
          uint32_t word = 0;
          std::memcpy(&word, dc + 64 * part + 4 * l, 4);
          for (int k = 0; k < 4; ++k)
            for (int half = 0; half < 2; ++half) acc += ts[32 * (4 * part + k) + plane_index(word, k, half)];
        }
      }
      out = std::fma(static_cast<float>(acc) * a.scale[static_cast<size_t>(t * p.groups + g)], mq::f16_to_f32(p.block_scales(b, g)[l]), out);
    }
    return out;
  });
}

#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
// R blocks for token t: per group, per double step, its 12 table registers, then block by block its three code
// words through them (one int32 chain per block, the R chains overlapping); the group's sum scaled once per group.
template <int R>
void tile3(const BlockedCodes& p, int64_t b0, const Lut3Acts& a, int64_t t, float* y) {
  const int64_t dpg = p.group_k / kPlaneCols, per = kPlaneRegs * 32;
  const int16_t* tab = a.tab.data() + t * a.dsteps * per;
  const uint8_t* wp[R];
  for (int r = 0; r < R; ++r) wp[r] = p.block_codes(b0 + r);
  const __m512i low4 = _mm512_set1_epi16(0x000F), odd16 = _mm512_set1_epi32(0x00100000), ones = _mm512_set1_epi16(1);
  __m512 out[R];
  for (int r = 0; r < R; ++r) out[r] = _mm512_setzero_ps();
  for (int64_t g = 0; g < p.groups; ++g) {
    __m512i acc[R];
    for (int r = 0; r < R; ++r) {
      acc[r] = _mm512_setzero_si512();
      prefetch_scales_ahead(p, b0 + r, g);
    }
    for (int64_t d = 0; d < dpg; ++d) {
      const int16_t* ts = tab + (g * dpg + d) * per;
      __m512i table[kPlaneRegs];
#pragma GCC unroll 12
      for (int k = 0; k < kPlaneRegs; ++k) table[k] = _mm512_load_si512(ts + 32 * k);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        // A double step is three cache lines of each block's stream: one prefetch per line.
        __builtin_prefetch(wp[r] + mq::kBlockPrefetchBytes);
        __builtin_prefetch(wp[r] + mq::kBlockPrefetchBytes + 64);
        __builtin_prefetch(wp[r] + mq::kBlockPrefetchBytes + 128);
        __m512i s = acc[r];
#pragma GCC unroll 3
        for (int part = 0; part < 3; ++part) {
          const __m512i code = _mm512_loadu_si512(wp[r] + 64 * part);
#pragma GCC unroll 4
          for (int k = 0; k < 4; ++k) {
            const __m512i idx = _mm512_ternarylogic_epi32(_mm512_srli_epi16(code, 4 * k), low4, odd16, 0xEA);  // (A & B) | C
            s = _mm512_dpwssd_epi32(s, _mm512_permutexvar_epi16(idx, table[4 * part + k]), ones);
          }
        }
        wp[r] += kPlaneBytes;
        acc[r] = s;
      }
    }
    const __m512 sg = _mm512_set1_ps(a.scale[static_cast<size_t>(t * p.groups + g)]);
    for (int r = 0; r < R; ++r)
      out[r] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc[r]), sg),
                               _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.block_scales(b0 + r, g)))), out[r]);
  }
  store_blocks<R>(p, b0, t, out, y);
}
#endif

// y = W x for n tokens through the planes' 16-bit tables (use_isa: the AVX-512 tile where built, else the twin).
inline void gemm_lut3_16(const BlockedCodes& p, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  check_planes3(p);
  const Lut3Acts& a = make_tables3(p, x, n);
#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
  if (use_isa) return for_each_item(p, n, std::max(1, threads), [&](auto r, int64_t b0, int64_t t) { tile3<decltype(r)::value>(p, b0, a, t, y); });
#endif
  (void)use_isa;
  lut3_twin(p, a, y, std::max(1, threads));
}

// Either family's 16-bit tables, for callers that hold a scheme (vs_ggml's `-table16` rows, its check, the test):
// int3 runs on its bit planes, int2 on the plain 16-row blocks. The family decides here and nowhere else.
inline bool runs_planes3(const mq::Scheme& s) { return mq::traits_of(s).family == mq::Int3Family::kName; }

inline BlockedCodes pack_table16(const mq::QTensor& q) {
  BlockedCodes b = mq::pack_blocked(q);
  return runs_planes3(b.scheme) ? pack_planes3(b) : b;
}

// y = W x for n tokens through w's family's 16-bit tables (w from pack_table16).
inline void gemm_table16(const BlockedCodes& w, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  if (runs_planes3(w.scheme)) gemm_lut3_16(w, x, n, y, threads, use_isa);
  else gemm_lut16(w, x, n, y, threads, use_isa);
}

// The bound's slack per activation, (n, groups): 0.5 s_g (1 + 2^-20) for each lookup a weight takes part in, one
// for int2 (lut_kernel16.h's bound), two for int3's planes (this header's), s_g the tables' step for x.
inline std::vector<double> table16_slack(const BlockedCodes& w, const float* x, int64_t n) {
  const bool planes = runs_planes3(w.scheme);
  const std::vector<float>& step = planes ? make_tables3(w, x, n).scale : make_tables16(w, x, n).scale;
  const double lookups = planes ? 2.0 : 1.0;
  std::vector<double> slack(step.size());
  for (size_t i = 0; i < step.size(); ++i) slack[i] = lookups * 0.5 * step[i] * (1 + 0x1p-20);
  return slack;
}

}  // namespace mqbench::lut

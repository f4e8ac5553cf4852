// Dynamic-activation kernels for int8 / int4 weights: each token is quantized to int8 (one fp32
// scale per token, quantize_activations), then sum_i u_i a_i is an unsigned x signed byte dot
// (vpdpbusd where available) and sum_i (u_i - z) a_i = sum_i u_i a_i - z * sum_i a_i per group, with
// sum_i a_i computed once per call. Group partial dots are exact int32 and are converted to float
// and scaled once per group (or every kMaxRun chunks inside a long group, before float loses bits).
#include <omp.h>

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/half.h"
#include "miniquant/kernels/isa_x86.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/word_kernel.h"
#include "miniquant/kernels/ref.h"
#include "miniquant/pack.h"

namespace mq {
namespace kdetail {
namespace {

// The portable twin of VnniIsa: the same chunk semantics in plain loops.
struct PortableIsa {
  struct U { uint8_t v[32]; };
  struct I { int32_t v[8]; };
  struct Fv { float v[8]; };
  static I izero() { return {}; }
  static Fv fzero() { return {}; }
  static U load(const uint8_t* p) {
    U u;
    for (int i = 0; i < 32; ++i) u.v[i] = p[i];
    return u;
  }
  static void nibbles(const uint8_t* p, U& lo, U& hi) {
    for (int i = 0; i < 32; ++i) {
      lo.v[i] = p[i] & 0x0F;
      hi.v[i] = static_cast<uint8_t>(p[i] >> 4);
    }
  }
  static void dot(I& acc, const U& u, const int8_t* a) {
    for (int l = 0; l < 8; ++l)
      for (int q = 0; q < 4; ++q) acc.v[l] += int32_t{u.v[4 * l + q]} * int32_t{a[4 * l + q]};
  }
  static void flush(Fv& f, const I& acc, float s) {
    for (int l = 0; l < 8; ++l) f.v[l] += static_cast<float>(acc.v[l]) * s;
  }
  static void flush2(Fv& f, const I& acc, float s0, float s1) {
    for (int l = 0; l < 8; ++l) f.v[l] += static_cast<float>(acc.v[l]) * (l < 4 ? s0 : s1);
  }
  static float hsum(const Fv& f) {
    float s = 0.0f;
    for (float v : f.v) s += v;
    return s;
  }
};

constexpr int64_t kChunkBytes = 32;
// Per lane, one chunk adds at most 4 * 2 * 255 * 127 < 2^18 (int4: two dots of 15 * 127 each):
// 32 chunks stay below 2^24, where int32 -> float is still exact.
constexpr int64_t kMaxRun = 32;

struct DynPlan {
  int64_t rows = 0, cols = 0, n = 0;
  int bits = 8;
  int64_t CE = 0;      // elements per 32-byte chunk: 32 (int8) or 64 (int4)
  int64_t nchunk = 0;  // whole chunks per row; per-channel / per-tensor rows may end in a scalar tail
  int64_t g = 0, gpr = 0;
  int64_t lda = 0;                // stride of one token in `a`
  std::vector<int8_t> a;          // (n, lda) chunk order: int8 as is; int4 per chunk: 32 even then 32 odd elements
  std::vector<int8_t> araw;       // (n, cols) original order, for tails
  std::vector<float> sx;          // (n) activation scales
  std::vector<int32_t> ag;        // (gpr, n) per-group sums of a
  std::vector<float> agf;         // (gpr, n) the same as floats (exact: |sum| < 2^24)
};

DynPlan make_dyn_plan(const QTensor& w, const float* x, int64_t n) {
  DynPlan p;
  p.rows = w.rows;
  p.cols = w.cols;
  p.n = n;
  p.bits = w.scheme.bits;
  p.CE = kChunkBytes * 8 / p.bits;
  p.nchunk = w.cols / p.CE;
  p.g = w.scheme.group_width(w.cols);
  p.gpr = w.scheme.groups_per_row(w.cols);
  p.lda = p.nchunk * p.CE;
  p.a.resize(static_cast<size_t>(n * p.lda));
  p.araw.resize(static_cast<size_t>(n * w.cols));
  p.sx.resize(static_cast<size_t>(n));
  p.ag.assign(static_cast<size_t>(p.gpr * n), 0);
  for (int64_t t = 0; t < n; ++t) {
    int8_t* raw = p.araw.data() + t * w.cols;
    p.sx[t] = quantize_activations(x + t * w.cols, w.cols, raw);
    int8_t* at = p.a.data() + t * p.lda;
    for (int64_t c = 0; c < p.nchunk; ++c)
      for (int64_t j = 0; j < p.CE; ++j) {
        // int4: byte j of a chunk holds elements 2j (low nibble) and 2j+1 (high nibble).
        const int64_t src = p.bits == 8 ? j : (j < 32 ? 2 * j : 2 * (j - 32) + 1);
        at[c * p.CE + j] = raw[c * p.CE + src];
      }
    for (int64_t gi = 0; gi < p.gpr; ++gi) {
      int32_t s = 0;
      for (int64_t c = gi * p.g; c < (gi + 1) * p.g; ++c) s += raw[c];
      p.ag[gi * n + t] = s;
    }
  }
  p.agf.assign(p.ag.begin(), p.ag.end());
  return p;
}

// Dot of chunks [c0, c1) of one row with T tokens (token t's activations at at[t]), from zero, into
// acc[t]. Code shape matters here: with the accumulators in an array (or a lambda's captures) gcc 12
// copies every vpdpbusd accumulator to another register and back each iteration; as tuple members
// expanded from an index pack it keeps them in place, as clang 14 does either way (bench/README.md).
template <class Isa, int Bits, size_t... K>
inline void dot_chunks(typename Isa::I* acc, const uint8_t* row, const int8_t* const* at, int64_t c0, int64_t c1,
                       std::index_sequence<K...>) {
  constexpr int64_t ce = kChunkBytes * 8 / Bits;
  auto r = std::make_tuple(((void)K, Isa::izero())...);
  for (int64_t c = c0; c < c1; ++c) {
    if constexpr (Bits == 8) {
      const typename Isa::U u = Isa::load(row + c * kChunkBytes);
      (Isa::dot(std::get<K>(r), u, at[K] + c * ce), ...);
    } else {
      typename Isa::U lo, hi;
      Isa::nibbles(row + c * kChunkBytes, lo, hi);
      (Isa::dot(std::get<K>(r), lo, at[K] + c * ce), ...);
      (Isa::dot(std::get<K>(r), hi, at[K] + c * ce + 32), ...);
    }
  }
  ((acc[K] = std::get<K>(r)), ...);
}

// The same, out of line: inlined into the row loop, gcc 12 reintroduces the per-iteration copies
// for loop-carried accumulators; as its own function the loop is clean. Used for runs of several
// chunks, where one call is amortized over the run.
template <class Isa, int Bits, size_t... K>
__attribute__((noinline)) void dot_chunks_outlined(typename Isa::I* acc, const uint8_t* row, const int8_t* const* at,
                                                   int64_t c0, int64_t c1, std::index_sequence<K...> ks) {
  dot_chunks<Isa, Bits>(acc, row, at, c0, c1, ks);
}

// out[t] = sum_g s_g * sum_{i in g} u_i a_i for tokens t0 .. t0+T-1 (zero-point term excluded).
// M = 2: a chunk holds two groups (int4 g32); M = 1: a group is a whole number of chunks.
template <class Isa, int Bits, int T, int M>
void dyn_row(const uint8_t* row, const float* sf, const DynPlan& p, int64_t t0, float* out) {
  typename Isa::Fv f[T];
  typename Isa::I acc[T];
  const int8_t* at[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    f[t] = Isa::fzero();
    at[t] = p.a.data() + (t0 + t) * p.lda;
  }
  if constexpr (M == 2) {
    for (int64_t c = 0; c < p.nchunk; ++c) {
      dot_chunks<Isa, Bits>(acc, row, at, c, c + 1, std::make_index_sequence<T>());
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) Isa::flush2(f[t], acc[t], sf[2 * c], sf[2 * c + 1]);
    }
  } else {
    const int64_t per_group = p.gpr == 1 ? p.nchunk : p.g / p.CE;
    for (int64_t c = 0, gi = 0; c < p.nchunk; ++gi) {
      const int64_t end = std::min(p.nchunk, c + per_group);
      while (c < end) {
        const int64_t run_end = std::min(end, c + kMaxRun);
        if (run_end - c > 1)
          dot_chunks_outlined<Isa, Bits>(acc, row, at, c, run_end, std::make_index_sequence<T>());
        else
          dot_chunks<Isa, Bits>(acc, row, at, c, run_end, std::make_index_sequence<T>());
        c = run_end;
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) Isa::flush(f[t], acc[t], sf[gi]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    // Rows whose width is not a whole number of chunks (per-channel / per-tensor, or int4 g32 with
    // an odd number of groups): the rest one element at a time.
    float tail = 0.0f;
    const int8_t* raw = p.araw.data() + (t0 + t) * p.cols;
    for (int64_t c = p.nchunk * p.CE; c < p.cols; ++c)
      tail += sf[c / p.g] * static_cast<float>(int32_t{field_at(row, c, Bits)} * raw[c]);
    out[t] = Isa::hsum(f[t]) + tail;
  }
}

template <class Isa, int Bits, int M>
void dyn_run(const QTensor& w, const float* x, int64_t n, float* y, int threads) {
  const DynPlan p = make_dyn_plan(w, x, n);
  int nt = threads > 0 ? threads : omp_get_max_threads();
  if (w.rows * w.cols * n < (int64_t{1} << 16)) nt = 1;
  const int64_t rc = std::clamp<int64_t>((256 << 10) / std::max<int64_t>(w.row_bytes(), 1), 1,
                                         std::max<int64_t>(1, (w.rows + nt - 1) / nt));
  const int64_t nchunks = (w.rows + rc - 1) / rc;
  const int zero_sym = 1 << (Bits - 1);
#pragma omp parallel num_threads(nt)
  {
    std::vector<float> sf(static_cast<size_t>(p.gpr), 0.0f);  // one row's scales
    std::vector<float> corr(static_cast<size_t>(n), 0.0f);    // (n) zero-point term of one row
    std::vector<float> sz(static_cast<size_t>(p.gpr), 0.0f);  // (gpr) s_g * z_g of one row
    float out[8];
#pragma omp for schedule(static)
    for (int64_t ch = 0; ch < nchunks; ++ch) {
      for (int64_t r = ch * rc; r < std::min(w.rows, (ch + 1) * rc); ++r) {
        row_scales(w, r, p.gpr, zero_sym, sf.data(), sz.data());
        zero_terms(sz.data(), p.agf.data(), p.gpr, n, corr.data());
        const uint8_t* row = w.row_codes(r);
        int64_t t0 = 0;
        for (; t0 + 8 <= n; t0 += 8) {
          dyn_row<Isa, Bits, 8, M>(row, sf.data(), p, t0, out);
          for (int t = 0; t < 8; ++t) y[(t0 + t) * w.rows + r] = p.sx[t0 + t] * (out[t] - corr[t0 + t]);
        }
        for (; t0 < n; ++t0) {
          dyn_row<Isa, Bits, 1, M>(row, sf.data(), p, t0, out);
          y[t0 * w.rows + r] = p.sx[t0] * (out[0] - corr[t0]);
        }
      }
    }
  }
}

// 1 or 2 groups per chunk, or 0 when the group width fits neither (then the scalar reference runs).
int group_layout(const QTensor& w) {
  const int64_t ce = kChunkBytes * 8 / w.scheme.bits, g = w.scheme.group_width(w.cols);
  if (w.scheme.groups_per_row(w.cols) <= 1 || g % ce == 0) return 1;
  if (w.scheme.bits == 4 && g == 32) return 2;
  return 0;
}

template <class Isa>
void dyn_dispatch(const QTensor& w, const float* x, int64_t n, float* y, int threads) {
  const int layout = group_layout(w);
  if (layout == 0) return gemm_dynamic_ref(w, x, n, y);
  if (w.scheme.bits == 8) return dyn_run<Isa, 8, 1>(w, x, n, y, threads);
  if (layout == 2) return dyn_run<Isa, 4, 2>(w, x, n, y, threads);
  return dyn_run<Isa, 4, 1>(w, x, n, y, threads);
}

}  // namespace
}  // namespace kdetail

bool has_vnni_path() { return kdetail::VnniIsa::kAvailable; }

void gemm_dynamic(const QTensor& w, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  if (!supports_dynamic(w.scheme))
    throw UsageError("gemm_dynamic: needs int8 or int4 weights, not " + w.scheme.name());
  if constexpr (kdetail::VnniIsa::kAvailable) {
    if (use_isa) return kdetail::dyn_dispatch<kdetail::VnniIsa>(w, x, n, y, threads);
  }
  kdetail::dyn_dispatch<kdetail::PortableIsa>(w, x, n, y, threads);
}

}  // namespace mq

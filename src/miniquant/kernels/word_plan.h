// Weight-only kernel core, part 2 of 4: what is prepared once per call (Plan: permuted activations,
// per-group sums of x) and once per row (group scales, zero-point corrections), and the thread count.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "miniquant/kernels/word_decoders.h"

namespace mq::kdetail {

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

}  // namespace mq::kdetail

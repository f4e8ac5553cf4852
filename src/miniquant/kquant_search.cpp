// The K-quant parameter search: per sub-block weighted least squares over candidate scales, integer scales
// against a super-block factor chosen among candidates, then coordinate descent on the exact stored error.
#include "miniquant/kquant_search.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/half.h"
#include "miniquant/kquant.h"

namespace mq {
namespace {

// fp16 bits of a factor: never 0 for v != 0 (a factor rounded to zero would wipe the block), mq::Error beyond
// the fp16 range.
uint16_t to_f16(float v) {
  uint16_t h = f32_to_f16(v);
  if (v != 0.0f && f16_to_f32(h) == 0.0f) h = v > 0.0f ? uint16_t{1} : uint16_t{0x8001};
  if (!std::isfinite(f16_to_f32(h)))
    throw Error(fmt::format("K-quant block factor {:g} exceeds the fp16 range ({:g})", v, kF16Max));
  return h;
}

// Weighted squared error of n weights on the sub-block grid (D, M), codes nearest: exactly what the stored
// block decodes to (kencode's division). Used for the final scores that decide between search and
// round-to-nearest.
double exact_sub_error(const KFamily& f, const float* x, const float* wt, int n, float D, float M) {
  double e = 0.0;
  for (int i = 0; i < n; ++i) {
    const double r = static_cast<double>(x[i]) - kvalue(f, D, M, kencode(f, x[i], D, M));
    e += static_cast<double>(wt[i]) * r * r;
  }
  return e;
}

// The same score as the search's inner loop computes it, in kLanes float lanes (a fixed order) with the
// reciprocal of D: 16 weights per vector instead of one division each. A code can differ from kencode's at
// an exact tie; the search only ranks candidates with it, and the final choice is scored exactly.
constexpr int kLanes = 16;
double sub_error(const KFamily& f, const float* x, const float* wt, int n, float D, float M) {
  const float z = static_cast<float>(f.zero), qmax = static_cast<float>(f.qmax());
  float part[kLanes] = {};
  if (D == 0.0f) {  // every code decodes to -M
    for (int i0 = 0; i0 < n; i0 += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        const float r = x[i0 + l] + M;
        part[l] += wt[i0 + l] * r * r;
      }
  } else {
    const float inv = 1.0f / D;
    for (int i0 = 0; i0 < n; i0 += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        const float q = std::min(std::max(std::nearbyint((x[i0 + l] + M) * inv) + z, 0.0f), qmax);
        const float r = x[i0 + l] - (D * (q - z) - M);
        part[l] += wt[i0 + l] * r * r;
      }
  }
  for (int half = kLanes / 2; half > 0; half /= 2)
    for (int l = 0; l < half; ++l) part[l] += part[l + half];
  return part[0];
}

// The kLanes partial sums added in a fixed tree.
double lane_sum(float* part) {
  for (int half = kLanes / 2; half > 0; half /= 2)
    for (int l = 0; l < half; ++l) part[l] += part[l + half];
  return part[0];
}

// kblock_error with the search's fast score.
double block_score(const KFamily& f, const KParams& p, const float* x, const float* wt) {
  const KGrid g = kgrid(f, p);
  double e = 0.0;
  for (int b = 0; b < f.nsub(); ++b) e += sub_error(f, x + b * f.sub, wt + b * f.sub, f.sub, g.D[b], g.M[b]);
  return e;
}

// A sub-block's real-valued step and offset before the integers: w' = s (q - zero) - mu.
struct Fit {
  float s = 0.0f, mu = 0.0f;
};

// Families with mins: q in [0, qmax], mu >= 0 (the sub-block's minimum, when negative, sits on code 0).
// Round-to-nearest maps [min(x, 0), max(x)] onto the codes. The search tries inverse steps (qmax + t) / range,
// t in [-1, 1], fits (s, mu) to each candidate's codes by weighted least squares (mu clamped at 0), and keeps
// the fit with the lowest error on its own re-rounded codes.
Fit fit_min(const KFamily& f, const float* x, const float* wt, int n, bool search) {
  float lo = 0.0f, hi = x[0];
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  if (!(hi > lo)) return {0.0f, -lo};
  const float nmax = static_cast<float>(f.qmax()), range = hi - lo;
  Fit best{range / nmax, -lo};
  if (!search) return best;
  double best_e = sub_error(f, x, wt, n, best.s, best.mu);
  double sw = 0, sx = 0;
  for (int i = 0; i < n; ++i) {
    sw += wt[i];
    sx += static_cast<double>(wt[i]) * x[i];
  }
  for (int k = -20; k <= 20; ++k) {
    const float iscale = (nmax + 0.05f * static_cast<float>(k)) / range;
    // The candidate's codes and the sums of its normal equations, in kLanes float lanes (vectorised).
    float l1[kLanes] = {}, l2[kLanes] = {}, xl[kLanes] = {};
    for (int i0 = 0; i0 < n; i0 += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        const float q = std::min(std::max(std::nearbyint(iscale * (x[i0 + l] - lo)), 0.0f), nmax), w = wt[i0 + l];
        l1[l] += w * q;
        l2[l] += w * q * q;
        xl[l] += w * x[i0 + l] * q;
      }
    const double sl = lane_sum(l1), sll = lane_sum(l2), sxl = lane_sum(xl);
    const double det = sw * sll - sl * sl;
    if (!(det > 0.0)) continue;
    double s = (sw * sxl - sx * sl) / det, mu = (s * sl - sx) / sw;
    if (mu < 0.0) {
      mu = 0.0;
      s = sxl / sll;
    }
    if (!(s > 0.0)) continue;
    const Fit c{static_cast<float>(s), static_cast<float>(mu)};
    const double e = sub_error(f, x, wt, n, c.s, c.mu);
    if (e < best_e) best_e = e, best = c;
  }
  return best;
}

// Families without mins: q - zero in [-zero, qmax - zero], a signed step. Round-to-nearest puts the
// largest-magnitude weight on the longer end (-zero). The search tries that end and the other one, each
// stretched by t in [-1, 1] codes, fits s by weighted least squares to each candidate's codes, and keeps the
// lowest error on re-rounded codes.
Fit fit_sym(const KFamily& f, const float* x, const float* wt, int n, bool search) {
  float amax = 0.0f, xm = 0.0f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), xm = x[i];
  if (amax == 0.0f) return {};
  const float neg = static_cast<float>(f.zero), pos = static_cast<float>(f.qmax() - f.zero);
  Fit best{-xm / neg, 0.0f};
  if (!search) return best;
  double best_e = sub_error(f, x, wt, n, best.s, 0.0f);
  for (const float end : {-neg, pos})
    for (int k = -10; k <= 10; ++k) {
      const float iscale = (end + std::copysign(0.1f, end) * static_cast<float>(k)) / xm;
      float xl[kLanes] = {}, l2[kLanes] = {};
      for (int i0 = 0; i0 < n; i0 += kLanes)
        for (int l = 0; l < kLanes; ++l) {
          const float q = std::min(std::max(std::nearbyint(iscale * x[i0 + l]), -neg), pos), w = wt[i0 + l];
          xl[l] += w * x[i0 + l] * q;
          l2[l] += w * q * q;
        }
      const double sxl = lane_sum(xl), sll = lane_sum(l2);
      if (!(sll > 0.0)) continue;
      const float s = static_cast<float>(sxl / sll);
      const double e = sub_error(f, x, wt, n, s, 0.0f);
      if (e < best_e) best_e = e, best = {s, 0.0f};
    }
  return best;
}

// The integers of one sub-block on factors (dh, dmh) (the fp16 values): round-to-nearest of s / dh and
// mu / dmh, clamped; with `neighbours`, the best of floor and ceil of each by the exact error.
struct Ints {
  int sc = 0, m = 0;
  double e = 0.0;
};
Ints sub_ints(const KFamily& f, const float* x, const float* wt, const Fit& fit, float dh, float dmh, bool neighbours) {
  auto clamp_sc = [&](double v) { return static_cast<int>(std::clamp(v, double(f.sc_lo), double(f.sc_hi))); };
  auto clamp_m = [&](double v) { return static_cast<int>(std::clamp(v, 0.0, double(f.m_hi))); };
  const double rs = dh != 0.0f ? double(fit.s) / dh : 0.0, rm = f.has_min && dmh != 0.0f ? double(fit.mu) / dmh : 0.0;
  auto err = [&](int sc, int m) { return sub_error(f, x, wt, f.sub, dh * static_cast<float>(sc), dmh * static_cast<float>(m)); };
  Ints best{clamp_sc(std::nearbyint(rs)), clamp_m(std::nearbyint(rm)), 0.0};
  best.e = err(best.sc, best.m);
  if (!neighbours) return best;
  for (const int sc : {clamp_sc(std::floor(rs)), clamp_sc(std::ceil(rs))})
    for (const int m : {clamp_m(std::floor(rm)), clamp_m(std::ceil(rm))}) {
      if (sc == best.sc && m == best.m) continue;
      const double e = err(sc, m);
      if (e < best.e) best = {sc, m, e};
    }
  return best;
}

struct Candidate {
  KParams p;
  double e = std::numeric_limits<double>::infinity();
};

// All sub-blocks' integers for factors (d, dmin) (rounded to fp16 here), and the block's total error.
Candidate with_factors(const KFamily& f, const float* x, const float* wt, const Fit* fits, float d, float dmin,
                       bool neighbours) {
  Candidate c;
  c.p.d = to_f16(d);
  c.p.dmin = f.has_min ? to_f16(dmin) : uint16_t{0};
  const float dh = f16_to_f32(c.p.d), dmh = f16_to_f32(c.p.dmin);
  c.e = 0.0;
  for (int b = 0; b < f.nsub(); ++b) {
    const Ints in = sub_ints(f, x + b * f.sub, wt + b * f.sub, fits[b], dh, dmh, neighbours);
    c.p.sc[b] = in.sc;
    c.p.m[b] = in.m;
    c.e += in.e;
  }
  return c;
}

// The factor that maps the largest |v| onto the integer range's end `end` (the longer one for signed scales).
float anchor(const float* v, int n, float end) {
  float vm = 0.0f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(v[i]) > std::fabs(vm)) vm = v[i];
  return vm / end;
}

// Coordinate descent on the exact error from c: (1) the fp16 factors refitted by weighted least squares to
// the current codes and integers (and the fp16 neighbours of d), (2) each sub-block's integers moved by one
// step. A move is kept only when the total error drops, so the result is never worse than c.
void refine(const KFamily& f, const float* x, const float* wt, Candidate& c) {
  uint8_t codes[kSuperBlock];
  for (int round = 0; round < 4; ++round) {
    bool moved = false;
    // (1) factors: w' = d a - dmin b with a = sc (q - zero), b = m.
    kencode_block(f, c.p, x, codes);
    double saa = 0, sab = 0, sbb = 0, sxa = 0, sxb = 0;
    for (int i = 0; i < kSuperBlock; ++i) {
      const int b = i / f.sub;
      const double a = double(c.p.sc[b]) * (codes[i] - f.zero), m = c.p.m[b], w = wt[i];
      saa += w * a * a;
      sab += w * a * m;
      sbb += w * m * m;
      sxa += w * x[i] * a;
      sxb += w * x[i] * m;
    }
    double d = saa > 0.0 ? sxa / saa : 0.0, dmin = 0.0;
    const double det = saa * sbb - sab * sab;
    if (f.has_min && det > 0.0) {
      d = (sxa * sbb - sab * sxb) / det;
      dmin = (d * sab - sxb) / sbb;
    }
    if (std::isfinite(d) && std::isfinite(dmin) && (!f.has_min || (d >= 0.0 && dmin >= 0.0))) {
      const uint16_t hd = to_f16(static_cast<float>(d)), hm = f.has_min ? to_f16(static_cast<float>(dmin)) : uint16_t{0};
      for (const int step : {0, -1, 1}) {
        KParams p = c.p;
        p.d = static_cast<uint16_t>(hd + step);
        p.dmin = hm;
        if (!std::isfinite(f16_to_f32(p.d)) || (hd & 0x7fff) == 0) continue;
        const double e = block_score(f, p, x, wt);
        if (e < c.e) c = {p, e}, moved = true;
      }
    }
    // (2) integers, one sub-block at a time (the others' errors do not change).
    const float dh = f16_to_f32(c.p.d), dmh = f16_to_f32(c.p.dmin);
    for (int b = 0; b < f.nsub(); ++b) {
      const float* xb = x + b * f.sub;
      const float* wb = wt + b * f.sub;
      auto err = [&](int sc, int m) { return sub_error(f, xb, wb, f.sub, dh * static_cast<float>(sc), dmh * static_cast<float>(m)); };
      const int sc0 = c.p.sc[b], m0 = c.p.m[b];
      const double e0 = err(sc0, m0);
      double best = e0;
      int bsc = sc0, bm = m0;
      for (int ds = -1; ds <= 1; ++ds)
        for (int dm = f.has_min ? -1 : 0; dm <= (f.has_min ? 1 : 0); ++dm) {
          const int sc = sc0 + ds, m = m0 + dm;
          if ((ds == 0 && dm == 0) || sc < f.sc_lo || sc > f.sc_hi || m < 0 || m > f.m_hi) continue;
          const double e = err(sc, m);
          if (e < best) best = e, bsc = sc, bm = m;
        }
      if (bsc != sc0 || bm != m0) {
        c.p.sc[b] = bsc;
        c.p.m[b] = bm;
        c.e += best - e0;
        moved = true;
      }
    }
    if (!moved) break;
  }
}

}  // namespace

void kerror_weights(const float* x, const float* importance, float* wt) {
  float sum2 = 0.0f;
  for (int i = 0; i < kSuperBlock; ++i) sum2 += x[i] * x[i];
  const float sigma2 = 2.0f * sum2 / static_cast<float>(kSuperBlock);
  for (int i = 0; i < kSuperBlock; ++i) {
    const float v = sigma2 + x[i] * x[i];
    wt[i] = importance ? importance[i] * std::sqrt(v) : v;
  }
}

void kencode_block(const KFamily& f, const KParams& p, const float* x, uint8_t* codes) {
  const KGrid g = kgrid(f, p);
  for (int i = 0; i < kSuperBlock; ++i) codes[i] = kencode(f, x[i], g.D[i / f.sub], g.M[i / f.sub]);
}

double kblock_error(const KFamily& f, const KParams& p, const float* x, const float* wt) {
  const KGrid g = kgrid(f, p);
  double e = 0.0;
  for (int b = 0; b < f.nsub(); ++b) e += exact_sub_error(f, x + b * f.sub, wt + b * f.sub, f.sub, g.D[b], g.M[b]);
  return e;
}


KParams kchoose_params(const KFamily& f, const float* x, const float* wt, bool search) {
  const int ns = f.nsub();
  std::array<Fit, kMaxSubBlocks> fits{};
  std::array<float, kMaxSubBlocks> s{}, mu{};
  for (int b = 0; b < ns; ++b) {
    fits[b] = f.has_min ? fit_min(f, x + b * f.sub, wt + b * f.sub, f.sub, search)
                        : fit_sym(f, x + b * f.sub, wt + b * f.sub, f.sub, search);
    s[b] = fits[b].s;
    mu[b] = fits[b].mu;
  }
  // Round-to-nearest: the largest scale (and min) onto the end of the integer range.
  const float sc_end = f.has_min ? static_cast<float>(f.sc_hi) : static_cast<float>(f.sc_lo);
  const float d0 = anchor(s.data(), ns, sc_end), m0 = f.has_min ? anchor(mu.data(), ns, static_cast<float>(f.m_hi)) : 0.0f;
  const Candidate plain = with_factors(f, x, wt, fits.data(), d0, m0, false);
  if (!search) return plain.p;

  // Candidate factors around the anchors (and, for signed scales, the anchor on the other end); dmin after d.
  Candidate best = with_factors(f, x, wt, fits.data(), d0, m0, true);
  std::vector<float> ds;
  for (int k = -4; k <= 12; ++k) ds.push_back(d0 * (1.0f + 0.02f * static_cast<float>(k)));
  if (!f.has_min)
    for (int k = -4; k <= 12; ++k) ds.push_back(anchor(s.data(), ns, static_cast<float>(f.sc_hi)) * (1.0f + 0.02f * static_cast<float>(k)));
  float dbest = d0;
  for (const float d : ds) {
    const Candidate c = with_factors(f, x, wt, fits.data(), d, m0, true);
    if (c.e < best.e) best = c, dbest = d;
  }
  if (f.has_min)
    for (int k = -4; k <= 12; ++k) {
      const Candidate c = with_factors(f, x, wt, fits.data(), dbest, m0 * (1.0f + 0.02f * static_cast<float>(k)), true);
      if (c.e < best.e) best = c;
    }
  refine(f, x, wt, best);
  // Scored exactly (kencode's codes): the search is never worse than round-to-nearest.
  return kblock_error(f, best.p, x, wt) <= kblock_error(f, plain.p, x, wt) ? best.p : plain.p;
}

}  // namespace mq

// The shrink-grid scale search of the intN schemes (grid_search.h).
#include "miniquant/grid_search.h"

#include <algorithm>
#include <cmath>

#include "miniquant/quantize_detail.h"

namespace mq {

double search_error(const float* v, int64_t n, const float* importance, int64_t period, const Grid& g, const Scheme& s) {
  double e = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    // Exactly what value_at returns for the stored field.
    const float x = g.scale * static_cast<float>(encode(v[i], g, s) - g.zero);
    const float r = std::fabs(v[i] - x);
    const double w = importance ? importance[i % period] : 1.0;
    // powf: a score that ranks 81 candidates needs no more than float's 24 bits, at a third of pow's cost.
    if (r > 0.0f) e += w * static_cast<double>(std::pow(r, static_cast<float>(kSearchNorm)));
  }
  return e;
}

Grid search_grid(const float* v, int64_t n, const float* importance, int64_t period, const Scheme& s,
                 std::string_view name, int64_t scale_index) {
  float lo = 0.0f, hi = 0.0f, absmax = 0.0f, extreme = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, v[i]);
    hi = std::max(hi, v[i]);
    if (std::fabs(v[i]) > absmax) absmax = std::fabs(v[i]), extreme = v[i];
  }
  Grid best = detail::grid_from(lo, hi, absmax, s, name, scale_index);
  if (best.scale == 0.0f) return best;  // an all-zero group
  double best_e = search_error(v, n, importance, period, best, s);
  auto consider = [&](Grid g) {
    if (g.scale == 0.0f) return;  // shrunk below the smallest fp16 step: no grid
    const double e = search_error(v, n, importance, period, g, s);
    if (e < best_e) best_e = e, best = g;
  };
  const float qmax = static_cast<float>(s.qmax());
  for (int k = 0; k <= kSearchSteps; ++k) {
    const float p = static_cast<float>(100 - k) / 100.0f;
    if (!s.symmetric) {
      if (k > 0) consider(detail::grid_from(p * lo, p * hi, p * absmax, s, name, scale_index));
      continue;
    }
    // The shrunk scale with the whole field range (codes down to -(qmax + 1)).
    Grid g = detail::grid_from(0.0f, 0.0f, p * absmax, s, name, scale_index);
    g.full_range = true;
    consider(g);
    // A group whose largest weight is negative can also put it on the longer end -(qmax + 1): a finer step.
    // (A positive one would need a negative scale; tried in a harness, not kept.)
    if (extreme < 0.0f) {
      Grid e = detail::grid_from(0.0f, 0.0f, p * absmax * qmax / (qmax + 1.0f), s, name, scale_index);
      e.full_range = true;
      consider(e);
    }
  }
  return best;
}

}  // namespace mq

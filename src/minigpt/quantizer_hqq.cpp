// "-hqq": Half-Quadratic Quantization (Badri & Shaji, 2023), a calibration-free quantizer and the worked example of
// docs/ARCHITECTURE.md's "How to add a method": this file, its three declarations in quantizer_table.h, its row in
// quantizer_table.cpp and its mq::Search value are all of it.
//
// HQQ fits a group's grid to the weights under a sparsity-promoting l_p error (p = 0.7 < 1: a few large errors cost
// less than many small ones, so outliers do not drag the grid), by half-quadratic splitting: an auxiliary error e
// takes the l_p term's proximal step (shrink_lp) while the grid takes a least-squares step on w - e; beta, the
// splitting's weight, grows by kappa each iteration. The loop stops at the first iteration whose mean |w - w'| does
// not improve, as the authors' solver does. Their settings are kept (p 0.7, beta 10, kappa 1.01, 20 iterations).
// Their grid has a float zero-point and a fixed scale; ours stores an fp16 scale and an integer zero-point field
// (symmetric schemes: none), so the least-squares step refits the scale, and on asymmetric schemes HQQ's own
// zero-point step follows, rounded to the field. The grid kept is the best seen, starting from round-to-nearest's.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "miniquant/half.h"
#include "miniquant/quantize_detail.h"
#include "minigpt/quantizer_table.h"

namespace minigpt {

namespace {
constexpr float kNorm = 0.7f;     // p of the l_p error
constexpr float kBeta = 10.0f;    // the splitting's initial weight
constexpr float kKappa = 1.01f;   // its growth per iteration
constexpr int kIterations = 20;

// The proximal step of (1/beta) |x|^p: the error the grid need not fit.
float shrink_lp(float x, float beta) {
  const float a = std::fabs(x);
  if (a == 0.0f) return 0.0f;
  return std::copysign(std::max(a - std::pow(a, kNorm - 1.0f) / beta, 0.0f), x);
}

// Mean |v - v'| on grid g, v' what the stored fields decode to.
float mean_abs_error(const float* v, int64_t n, const mq::Grid& g, const mq::Scheme& s) {
  double e = 0.0;
  for (int64_t i = 0; i < n; ++i) e += std::fabs(v[i] - g.scale * static_cast<float>(mq::encode(v[i], g, s) - g.zero));
  return static_cast<float>(e / static_cast<double>(n));
}
}  // namespace

mq::Grid hqq_grid(const float* v, int64_t n, const float*, int64_t, const mq::Scheme& s, std::string_view name, int64_t index) {
  mq::Grid g = mq::detail::grid_for(v, n, s, name, index);
  if (g.scale == 0.0f) return g;  // an all-zero group
  mq::Grid best = g;
  float best_error = mean_abs_error(v, n, g, s);
  std::vector<float> q(static_cast<size_t>(n)), target(static_cast<size_t>(n));  // (n) codes minus zero; w - e
  float beta = kBeta;
  for (int it = 0; it < kIterations; ++it, beta *= kKappa) {
    double qq = 0.0, qt = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      q[i] = static_cast<float>(mq::encode(v[i], g, s) - g.zero);
      target[i] = v[i] - shrink_lp(v[i] - g.scale * q[i], beta);
      qq += static_cast<double>(q[i]) * q[i];
      qt += static_cast<double>(q[i]) * target[i];
    }
    if (qq == 0.0 || qt <= 0.0) break;
    mq::Grid next = g;
    next.scale_bits = mq::f32_to_f16(static_cast<float>(qt / qq));
    next.scale = mq::f16_to_f32(next.scale_bits);
    if (!std::isfinite(next.scale) || next.scale <= 0.0f) break;  // beyond fp16, or below its smallest step
    if (!s.symmetric) {  // HQQ's zero-point step on the new scale: z = mean(u - t / s), rounded to the field
      double z = 0.0;
      for (int64_t i = 0; i < n; ++i) z += (q[i] + static_cast<float>(g.zero)) - target[i] / next.scale;
      next.zero = static_cast<int>(std::clamp(std::nearbyint(z / static_cast<double>(n)), 0.0, static_cast<double>((1 << s.bits) - 1)));
    }
    const float e = mean_abs_error(v, n, next, s);
    if (!(e < best_error)) break;
    best = g = next;
    best_error = e;
  }
  return best;
}

std::string hqq_refuses(const mq::Scheme& s) {
  return s.is_integer() ? "" : "-hqq fits an integer scheme's group grids (K families: their own search)";
}

mq::QTensor hqq_quantize(const QuantizerInput& q) { return mq::quantize(q.weight, q.out, q.in, q.scheme, {.grid = &hqq_grid}, q.name); }

}  // namespace minigpt

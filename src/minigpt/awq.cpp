// AWQ (Lin et al., "AWQ: Activation-aware Weight Quantization", MLSys 2024), the scale search.
//
// A weight column that meets large activations matters more to the output; scaling it up by s_j before
// quantizing (and the input down by s_j, folded into what feeds the Linear) gives it a finer grid. AWQ
// takes s = mean|x|^alpha, normalised so sqrt(max(s) min(s)) = 1, and picks alpha on a grid by the
// Linear's own output error on calibration data. Here that error is exact and cheap: with H = X^T X / n,
// mean ||W x - W' x||^2 = tr((W - W') H (W - W')^T), W' = dequant(Q(W diag(s))) diag(1/s). alpha = 0 is
// s = 1, plain quantization, so the chosen scale never does worse than the recipe without it on the
// calibration rows. AWQ's clipping search is the recipe's own: "-awq-imatrix" searches each group's scale
// by error weighted with diag(H) (the diagonal of the clip objective), "-awq-gptq" runs GPTQ on the scaled weight.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/core.h>

#include "miniquant/gptq.h"
#include "miniquant/quantize.h"
#include "minigpt/transform_table.h"

namespace minigpt {

namespace {
constexpr int kAwqAlphaGrid = 20;       // alpha = i / 19, i = 0 .. 19: 20 points in [0, 1]
constexpr float kAwqMinMagnitude = 1e-4f;  // a channel that never fires gets this mean, not a zero scale

// s_j = max(m_j, kAwqMinMagnitude)^alpha / sqrt(max(s) min(s)).
std::vector<float> awq_candidate_scales(const std::vector<float>& mean_abs, double alpha) {
  std::vector<float> s(mean_abs.size());
  for (size_t j = 0; j < s.size(); ++j) s[j] = static_cast<float>(std::pow(std::max(mean_abs[j], kAwqMinMagnitude), alpha));
  const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
  const float norm = std::sqrt(*lo * *hi);
  for (float& v : s) v /= norm;
  return s;
}
}  // namespace

std::string awq_refuses(const mq::Scheme& scheme, mq::ActMode) {
  if (!scheme.is_integer() && !scheme.is_kquant()) return "AWQ scales a weight for an integer or K grid; " + scheme.name() + " is neither";
  return "";
}

TransformResult awq_scales(const TransformInput& in) {
  const LinearInfo& li = in.linear;
  const int64_t out = li.out, n = li.in;
  std::vector<float> scaled(static_cast<size_t>(out * n));  // (out, in) W diag(s)
  std::vector<float> back(scaled.size());                   // (out, in) dequant(Q(W diag(s))) diag(1/s)
  double best = std::numeric_limits<double>::infinity(), plain = best;
  double best_alpha = 0;
  std::vector<float> best_s;
  for (int i = 0; i < kAwqAlphaGrid; ++i) {
    const double alpha = static_cast<double>(i) / (kAwqAlphaGrid - 1);
    const std::vector<float> s = awq_candidate_scales(in.stats.mean_abs, alpha);
    for (int64_t r = 0; r < out; ++r)
      for (int64_t j = 0; j < n; ++j) scaled[static_cast<size_t>(r * n + j)] = li.weight[r * n + j] * s[static_cast<size_t>(j)];
    const mq::QTensor q = mq::quantize(scaled.data(), out, n, in.scheme, li.name + ".weight (AWQ candidate)");
    mq::dequantize(q, back.data());
    for (int64_t r = 0; r < out; ++r)
      for (int64_t j = 0; j < n; ++j) back[static_cast<size_t>(r * n + j)] /= s[static_cast<size_t>(j)];
    const double err = mq::output_error(li.weight, back.data(), out, n, in.stats.h);
    if (i == 0) plain = err;
    if (err < best) best = err, best_alpha = alpha, best_s = s;
  }
  return {std::move(best_s), fmt::format("awq: alpha {:.3f} of {} grid points; calibration output error {:.4g}, {:.3f}x the unscaled {:.4g}",
                                         best_alpha, kAwqAlphaGrid, best, plain > 0 ? best / plain : 1.0, plain)};
}

}  // namespace minigpt

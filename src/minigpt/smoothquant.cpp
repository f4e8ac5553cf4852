// SmoothQuant (Xiao et al., "SmoothQuant: Accurate and Efficient Post-Training Quantization for Large
// Language Models", ICML 2023), the migration scale, with its strength searched.
//
// Per-token int8 activations (+a8) lose precision when a few input channels are much larger than the
// rest: the row's one scale is set by the outlier. SmoothQuant divides channel j by
// s_j = max|x_j|^alpha / max|w_j|^(1 - alpha) (w_j: the weight column it multiplies) and multiplies the
// column by s_j, so activation and weight ranges meet in between. The paper fixes alpha = 0.5 and notes the
// best value depends on the model; here alpha is chosen per Linear on a grid (21 points in [0, 1], 0.5 among them), with
// s = 1 (no migration) as one more candidate, by the Linear's own output error on calibration rows with both
// quantizers applied as the kernels apply them: mean_t ||W x_t - deq(Q(W diag(s))) deq(Q_a(x_t / s))||^2, Q_a the
// per-token int8 (or 16-bit) activation quantizer. H = X^T X / n cannot score it (it does not see the per-token
// rounding), so the statistics keep calibration rows (ChannelStats::rows). Because s = 1 is a candidate, the
// chosen scale never raises that error. Folded into what feeds the Linear (scale_fold.h), the fp32 model is
// unchanged.
#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/Dense>
#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/quantize.h"
#include "minigpt/transform_table.h"

namespace minigpt {

namespace {
constexpr int kSmoothAlphaGrid = 21;         // alpha = i / 20, i = 0 .. 20: the paper's 0.5 is one of them
constexpr float kSmoothFloor = 1e-5f;        // a dead channel or an all-zero column keeps s finite
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// s_j = max|x_j|^alpha / max|w_j|^(1 - alpha).
std::vector<float> migration_scales(const std::vector<float>& xmax, const std::vector<float>& wmax, double alpha) {
  std::vector<float> s(xmax.size());
  for (size_t j = 0; j < s.size(); ++j) {
    const double x = std::max(xmax[j], kSmoothFloor), w = std::max(wmax[j], kSmoothFloor);
    s[j] = static_cast<float>(std::pow(x, alpha) / std::pow(w, 1.0 - alpha));
  }
  return s;
}

// Mean over the calibration rows of the squared output error of the Linear stored in `scheme` after scaling by s
// and run with `act`'s per-token activation quantizer, against the fp32 product ref = X W^T.
double smoothed_error(const LinearInfo& li, const RowMat& x, const RowMat& ref, const std::vector<float>& s, const mq::Scheme& scheme,
                      mq::ActMode act) {
  const int64_t out = li.out, in = li.in, m = x.rows();
  std::vector<float> scaled(static_cast<size_t>(out * in));  // (out, in) W diag(s)
  for (int64_t r = 0; r < out; ++r)
    for (int64_t j = 0; j < in; ++j) scaled[static_cast<size_t>(r * in + j)] = li.weight[r * in + j] * s[static_cast<size_t>(j)];
  const mq::QTensor q = mq::quantize(scaled.data(), out, in, scheme, li.name + ".weight (SmoothQuant candidate)");
  RowMat wq(out, in);  // (out, in) deq(Q(W diag(s)))
  mq::dequantize(q, wq.data());
  RowMat xq(m, in);    // (m, in) deq(Q_a(x / s)), row by row as the kernels quantize a token
  std::vector<float> xs(static_cast<size_t>(in));
  std::vector<int8_t> a8(static_cast<size_t>(in));
  std::vector<int16_t> a16(static_cast<size_t>(in));
  for (int64_t t = 0; t < m; ++t) {
    for (int64_t j = 0; j < in; ++j) xs[static_cast<size_t>(j)] = x(t, j) / s[static_cast<size_t>(j)];
    if (act == mq::ActMode::dynamic_int16) {
      const float sc = mq::quantize_activations16(xs.data(), in, a16.data());
      for (int64_t j = 0; j < in; ++j) xq(t, j) = sc * static_cast<float>(a16[static_cast<size_t>(j)]);
    } else {
      const float sc = mq::quantize_activations(xs.data(), in, a8.data());
      for (int64_t j = 0; j < in; ++j) xq(t, j) = sc * static_cast<float>(a8[static_cast<size_t>(j)]);
    }
  }
  const RowMat y = xq * wq.transpose();  // (m, out)
  return static_cast<double>((y - ref).squaredNorm()) / static_cast<double>(m);
}
}  // namespace

std::string smoothquant_refuses(const mq::Scheme&, mq::ActMode act) {
  if (act != mq::ActMode::dynamic_int8 && act != mq::ActMode::dynamic_int16)
    return "SmoothQuant eases per-token activation quantization; it needs +a8 or +a16";
  return "";
}

TransformResult smoothquant_scales(const TransformInput& in) {
  const LinearInfo& li = in.linear;
  const RowMat& x = in.stats.rows;  // (m, in)
  if (x.rows() == 0 || x.cols() != li.in)
    throw mq::UsageError(fmt::format("SmoothQuant '{}': no calibration rows of width {} to score its migration strength", li.name, li.in));
  std::vector<float> wmax(static_cast<size_t>(li.in), 0.0f);  // (in) max |W[:, j]|
  for (int r = 0; r < li.out; ++r)
    for (int j = 0; j < li.in; ++j)
      wmax[static_cast<size_t>(j)] = std::max(wmax[static_cast<size_t>(j)], std::fabs(li.weight[static_cast<size_t>(r) * li.in + j]));
  const Eigen::Map<const RowMat> w(li.weight, li.out, li.in);
  const RowMat ref = x * w.transpose();  // (m, out) the fp32 product
  std::vector<float> best(static_cast<size_t>(li.in), 1.0f);
  const double plain = smoothed_error(li, x, ref, best, in.scheme, in.act);
  double best_err = plain, best_alpha = -1;  // -1: s = 1 kept
  for (int i = 0; i < kSmoothAlphaGrid; ++i) {
    const double alpha = static_cast<double>(i) / (kSmoothAlphaGrid - 1);
    std::vector<float> s = migration_scales(in.stats.max_abs, wmax, alpha);
    const double err = smoothed_error(li, x, ref, s, in.scheme, in.act);
    if (err < best_err) best_err = err, best_alpha = alpha, best = std::move(s);
  }
  if (!std::isfinite(best_err)) throw mq::Error(fmt::format("SmoothQuant '{}': the calibration output error is not finite", li.name));
  std::vector<float> after(best.size());
  for (size_t j = 0; j < best.size(); ++j) after[j] = in.stats.max_abs[j] / best[j];
  const std::string chosen = best_alpha < 0 ? std::string("s = 1 kept (no alpha lowered the error)") : fmt::format("alpha {:.3f}", best_alpha);
  return {std::move(best),
          fmt::format("smoothquant: {} of {} grid points and s = 1, on {} calibration rows; output error {:.4g}, {:.3f}x the "
                      "unscaled {:.4g}; largest input channel {:.1f}x the median before, {:.1f}x after",
                      chosen, kSmoothAlphaGrid, x.rows(), best_err, plain > 0 ? best_err / plain : 1.0, plain, in.stats.outlier_ratio(),
                      outlier_ratio(after))};
}

}  // namespace minigpt

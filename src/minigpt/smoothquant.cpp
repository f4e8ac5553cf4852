// SmoothQuant (Xiao et al., "SmoothQuant: Accurate and Efficient Post-Training Quantization for Large
// Language Models", ICML 2023), the migration scale.
//
// Per-token int8 activations (+a8) lose precision when a few input channels are much larger than the
// rest: the row's one scale is set by the outlier. SmoothQuant divides channel j by
// s_j = max|x_j|^alpha / max|w_j|^(1 - alpha) (w_j: the weight column it multiplies) and multiplies the
// column by s_j, so activation and weight ranges meet in between; alpha = 0.5 is the paper's default.
// Folded into what feeds the Linear (scale_fold.h), the fp32 model is unchanged.
#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "minigpt/transform_table.h"

namespace minigpt {

namespace {
constexpr double kSmoothAlpha = 0.5;
constexpr float kSmoothFloor = 1e-5f;  // a dead channel or an all-zero column keeps s finite
}  // namespace

std::string smoothquant_refuses(const mq::Scheme&, mq::ActMode act) {
  if (act != mq::ActMode::dynamic_int8 && act != mq::ActMode::dynamic_int16)
    return "SmoothQuant eases per-token activation quantization; it needs +a8 or +a16";
  return "";
}

TransformResult smoothquant_scales(const TransformInput& in) {
  const LinearInfo& li = in.linear;
  std::vector<float> wmax(static_cast<size_t>(li.in), 0.0f);  // (in) max |W[:, j]|
  for (int r = 0; r < li.out; ++r)
    for (int j = 0; j < li.in; ++j)
      wmax[static_cast<size_t>(j)] = std::max(wmax[static_cast<size_t>(j)], std::fabs(li.weight[static_cast<size_t>(r) * li.in + j]));
  std::vector<float> s(static_cast<size_t>(li.in));
  std::vector<float> after(s.size());
  for (size_t j = 0; j < s.size(); ++j) {
    const double x = std::max(in.stats.max_abs[j], kSmoothFloor), w = std::max(wmax[j], kSmoothFloor);
    s[j] = static_cast<float>(std::pow(x, kSmoothAlpha) / std::pow(w, 1.0 - kSmoothAlpha));
    after[j] = static_cast<float>(in.stats.max_abs[j] / s[j]);
  }
  return {std::move(s), fmt::format("smoothquant: alpha {}; largest input channel {:.1f}x the median before, {:.1f}x after", kSmoothAlpha,
                                    in.stats.outlier_ratio(), outlier_ratio(after))};
}

}  // namespace minigpt

// AWQ (Lin et al., "AWQ: Activation-aware Weight Quantization", MLSys 2024): the scale search, then the clip search.
//
// A weight column that meets large activations matters more to the output; scaling it up by s_j before
// quantizing (and the input down by s_j, folded into what feeds the Linear) gives it a finer grid. AWQ
// takes s = mean|x|^alpha, normalised so sqrt(max(s) min(s)) = 1, and picks alpha on a grid by the error the
// quantized candidate W' = Q(W diag(s)) diag(1/s) leaves where it counts, as llm-awq does: in the output of the block
// the Linear feeds (the attention for qkv, GELU and mlp_down for mlp_up; transform_block.h), or, for attn_out, in its
// own output, exact from H = X^T X / n as tr((W - W') H (W - W')^T). Scored by their own output, mlp_up's scales cut
// that error by 4-19% per Linear and still took the model's KLD at int4-g128 from 7.45e-4 to 9.91e-4: the error moved
// onto the tokens after a story separator (9x RTN's KL there), which the block's output sees and the Linear's does not.
// Candidates are quantized as the recipe will quantize them (TransformInput::quantize: the plain grid, the searched
// one, or GPTQ), and alpha = 0 is s = 1, so the chosen scale never does worse than the recipe without it on the
// calibration windows. Then, where the recipe rounds to nearest on an integer grid, AWQ's clip search (clip_search
// below) clamps each group of the scaled weight to the bound its own output error prefers.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

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
// AWQ's clip search (llm-awq's auto_clip), after the scale: per output row and group of the scaled weight W diag(s),
// the bound |w| is clamped to before quantizing, max|w_g| (1 - i/20) for i = 0 .. 10 (at most half cut off), chosen by
// that group's own output error (w_g - w'_g)^T H'_gg (w_g - w'_g), H' = diag(1/s) H diag(1/s) the scaled input's
// second moment: a clipped range rounds the many small weights finer at the cost of the few largest. Rows before
// `first_row` (q and k in c_attn, whose errors the softmax amplifies; llm-awq leaves them too) keep i = 0.
constexpr int kClipSteps = 10;           // i = 0 .. 10
constexpr double kClipStep = 1.0 / 20;   // of the group's largest magnitude

struct Clip {
  std::vector<float> weight;  // (out, in) the scaled weight with each group clamped to its chosen bound
  int64_t groups = 0, clipped = 0;
  double before = 0, after = 0;  // sum over groups of the chosen level's error against i = 0's
};

Clip clip_search(const std::vector<float>& scaled, int64_t out, int64_t n, const Eigen::MatrixXd& h, const std::vector<float>& s,
                 const mq::Scheme& scheme, int64_t first_row, const std::string& name) {
  const int64_t g = scheme.group > 0 ? scheme.group : n;  // per-channel: the whole row is one group
  const int64_t ng = (n + g - 1) / g;
  Eigen::MatrixXd hs(n, n);  // (in, in) H' = diag(1/s) H diag(1/s)
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < n; ++b) hs(a, b) = h(a, b) / (static_cast<double>(s[static_cast<size_t>(a)]) * s[static_cast<size_t>(b)]);
  std::vector<float> peak(static_cast<size_t>(out * ng), 0.0f);  // (out, groups) max |w| per group
  for (int64_t r = 0; r < out; ++r)
    for (int64_t j = 0; j < n; ++j) {
      float& p = peak[static_cast<size_t>(r * ng + j / g)];
      p = std::max(p, std::fabs(scaled[static_cast<size_t>(r * n + j)]));
    }
  std::vector<double> best(peak.size(), std::numeric_limits<double>::infinity()), first(peak.size());
  std::vector<int> level(peak.size(), 0);
  std::vector<float> clamped(scaled.size()), back(scaled.size());  // (out, in) each
  Eigen::VectorXd d(g);
  for (int i = 0; i <= kClipSteps; ++i) {
    const double keep = 1.0 - i * kClipStep;
    for (int64_t r = 0; r < out; ++r)
      for (int64_t j = 0; j < n; ++j) {
        const float c = r < first_row ? peak[static_cast<size_t>(r * ng + j / g)] : static_cast<float>(peak[static_cast<size_t>(r * ng + j / g)] * keep);
        clamped[static_cast<size_t>(r * n + j)] = std::clamp(scaled[static_cast<size_t>(r * n + j)], -c, c);
      }
    mq::dequantize(mq::quantize(clamped.data(), out, n, scheme, name + ".weight (AWQ clip candidate)"), back.data());
    for (int64_t r = first_row; r < out; ++r)
      for (int64_t b = 0; b < ng; ++b) {
        const int64_t j0 = b * g, len = std::min(g, n - j0);
        for (int64_t k = 0; k < len; ++k) d(k) = static_cast<double>(back[static_cast<size_t>(r * n + j0 + k)]) - scaled[static_cast<size_t>(r * n + j0 + k)];
        const double e = d.head(len).dot(hs.block(j0, j0, len, len) * d.head(len));
        const size_t at = static_cast<size_t>(r * ng + b);
        if (i == 0) first[at] = e;
        if (e < best[at]) best[at] = e, level[at] = i;
      }
  }
  Clip c;
  c.weight = scaled;
  for (int64_t r = first_row; r < out; ++r)
    for (int64_t b = 0; b < ng; ++b) {
      const size_t at = static_cast<size_t>(r * ng + b);
      ++c.groups;
      c.before += first[at];
      c.after += best[at];
      if (level[at] == 0) continue;
      ++c.clipped;
      const float bound = static_cast<float>(peak[at] * (1.0 - level[at] * kClipStep));
      for (int64_t j = b * g; j < std::min(n, (b + 1) * g); ++j) {
        float& w = c.weight[static_cast<size_t>(r * n + j)];
        w = std::clamp(w, -bound, bound);
      }
    }
  return c;
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
    if (in.quantize) {
      // The recipe's quantizer sees the scaled input's second moment H' = diag(1/s) H diag(1/s).
      const Eigen::VectorXd inv = Eigen::Map<const Eigen::VectorXf>(s.data(), n).cast<double>().cwiseInverse();
      mq::dequantize(in.quantize(scaled.data(), inv.asDiagonal() * in.stats.h * inv.asDiagonal()), back.data());
    } else {
      mq::dequantize(mq::quantize(scaled.data(), out, n, in.scheme, li.name + ".weight (AWQ candidate)"), back.data());
    }
    for (int64_t r = 0; r < out; ++r)
      for (int64_t j = 0; j < n; ++j) back[static_cast<size_t>(r * n + j)] /= s[static_cast<size_t>(j)];
    const double err = in.block_error ? in.block_error(back.data()) : mq::output_error(li.weight, back.data(), out, n, in.stats.h);
    if (i == 0) plain = err;
    if (err < best) best = err, best_alpha = alpha, best_s = s;
  }
  std::string note = fmt::format("awq: alpha {:.3f} of {} grid points; calibration {} error {:.4g}, {:.3f}x the unscaled {:.4g}", best_alpha,
                                 kAwqAlphaGrid, in.block_error ? "block-output" : "output", best, plain > 0 ? best / plain : 1.0, plain);
  // The clip search where the recipe rounds to nearest on an integer grid with a scale per group or row (a K family
  // searches its own sub-block scales; GPTQ and the searched grids are better left the full range, in.round_to_nearest).
  if (!in.round_to_nearest || !in.scheme.is_integer() || in.scheme.group == mq::kPerTensor) return {std::move(best_s), std::move(note), {}};
  for (int64_t r = 0; r < out; ++r)
    for (int64_t j = 0; j < n; ++j) scaled[static_cast<size_t>(r * n + j)] = li.weight[r * n + j] * best_s[static_cast<size_t>(j)];
  const int64_t first_row = li.kind == LinearKind::qkv ? 2 * out / 3 : 0;  // c_attn's rows: [q | k | v]
  Clip c = clip_search(scaled, out, n, in.stats.h, best_s, in.scheme, first_row, li.name);
  note += fmt::format("; clip: {} of {} groups{} clipped, their output error {:.3f}x unclipped", c.clipped, c.groups,
                      first_row > 0 ? " (v rows; q and k kept)" : "", c.before > 0 ? c.after / c.before : 1.0);
  return {std::move(best_s), std::move(note), std::move(c.weight)};
}

}  // namespace minigpt

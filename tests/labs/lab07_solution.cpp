// Learner-style solution of lab 07 (AWQ), written from the handout alone on 2026-11-29
// (labs/07-awq/README.md, lab07.h, the starter and the library headers they name).
// Graded by the test suite (`lab07_solution`, the lab 07 checks), not the course's reference.
// Blocks A-D below; block E runs A, C and D on the whole model.
#include "lab07.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "miniquant/error.h"
#include "miniquant/gptq.h"      // mq::output_error(w, w2, rows, cols, h)
#include "miniquant/half.h"      // mq::f32_to_f16, mq::f16_to_f32
#include "miniquant/quantize.h"  // mq::quantize, mq::dequantize

namespace lab {

std::vector<float> channel_mean_abs(const float* x, int64_t n, int64_t in) {
  std::vector<double> acc(static_cast<size_t>(in), 0.0);
  for (int64_t r = 0; r < n; ++r) {
    const float* row = x + r * in;
    for (int64_t j = 0; j < in; ++j) acc[j] += std::fabs(static_cast<double>(row[j]));
  }
  std::vector<float> out(static_cast<size_t>(in), 0.0f);
  if (n <= 0) return out;
  for (int64_t j = 0; j < in; ++j) out[j] = static_cast<float>(acc[j] / static_cast<double>(n));
  return out;
}

std::vector<int64_t> top_channels(const std::vector<float>& importance, double fraction) {
  const int64_t size = static_cast<int64_t>(importance.size());
  int64_t k = static_cast<int64_t>(std::ceil(fraction * static_cast<double>(size)));
  k = std::clamp<int64_t>(k, 0, size);
  std::vector<int64_t> idx(static_cast<size_t>(size));
  std::iota(idx.begin(), idx.end(), int64_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return importance[a] > importance[b]; });
  idx.resize(static_cast<size_t>(k));
  std::sort(idx.begin(), idx.end());
  return idx;
}

std::vector<float> keep_salient_fp16(const float* w, int64_t out, int64_t in, const mq::Scheme& s, const std::vector<int64_t>& keep) {
  const mq::QTensor q = mq::quantize(w, out, in, s);
  std::vector<float> res = mq::dequantize(q);
  for (int64_t j : keep) {
    if (j < 0 || j >= in) throw mq::UsageError("keep_salient_fp16: channel " + std::to_string(j) + " out of range");
    for (int64_t r = 0; r < out; ++r) res[r * in + j] = mq::f16_to_f32(mq::f32_to_f16(w[r * in + j]));
  }
  return res;
}

AwqChoice awq_search(const float* w, int64_t out, int64_t in, const std::vector<float>& mean_abs, const Eigen::MatrixXd& h,
                     const mq::Scheme& s) {
  if (static_cast<int64_t>(mean_abs.size()) != in) throw mq::UsageError("awq_search: mean_abs size != in");
  AwqChoice best;
  bool have = false;
  std::vector<float> ws(static_cast<size_t>(out * in));
  std::vector<float> scales(static_cast<size_t>(in));
  std::vector<double> sd(static_cast<size_t>(in));
  for (int i = 0; i <= 19; ++i) {
    const double alpha = i / 19.0;
    double mx = 0, mn = 0;
    for (int64_t j = 0; j < in; ++j) {
      const double m = std::max(static_cast<double>(mean_abs[j]), 1e-4);
      sd[j] = std::pow(m, alpha);
      if (j == 0 || sd[j] > mx) mx = sd[j];
      if (j == 0 || sd[j] < mn) mn = sd[j];
    }
    const double norm = std::sqrt(mx * mn);
    for (int64_t j = 0; j < in; ++j) scales[j] = static_cast<float>(sd[j] / norm);
    for (int64_t r = 0; r < out; ++r)
      for (int64_t j = 0; j < in; ++j) ws[r * in + j] = w[r * in + j] * scales[j];
    std::vector<float> w2 = mq::dequantize(mq::quantize(ws.data(), out, in, s));
    for (int64_t r = 0; r < out; ++r)
      for (int64_t j = 0; j < in; ++j) w2[r * in + j] /= scales[j];
    const double err = mq::output_error(w, w2.data(), out, in, h);
    if (i == 0) best.plain_error = err;
    if (!have || err < best.error) {
      have = true;
      best.alpha = alpha;
      best.error = err;
      best.scales = scales;
    }
  }
  return best;
}

void fold_input_scale(minigpt::Model& m, const minigpt::LinearInfo& li, const std::vector<float>& s) {
  if (static_cast<int64_t>(s.size()) != li.in) throw mq::UsageError("fold_input_scale: " + li.name + ": scale size != in");
  if (li.kind == minigpt::LinearKind::mlp_down)
    throw mq::UsageError("fold_input_scale: " + li.name + ": mlp_down's input is GELU's output, a scale cannot be folded");
  const std::string layer = "h." + std::to_string(li.layer) + ".";
  const int in = li.in;
  // The Linear's own weight: column j times s_j.
  float* w = m.param(li.name + ".weight");
  for (int r = 0; r < li.out; ++r)
    for (int j = 0; j < in; ++j) w[static_cast<int64_t>(r) * in + j] *= s[j];
  // Its input's producer: channel j divided by s_j.
  if (li.kind == minigpt::LinearKind::qkv || li.kind == minigpt::LinearKind::mlp_up) {
    const std::string ln = layer + (li.kind == minigpt::LinearKind::qkv ? "ln_1" : "ln_2");
    float* g = m.param(ln + ".weight");
    float* b = m.param(ln + ".bias");
    for (int j = 0; j < in; ++j) {
      g[j] /= s[j];
      b[j] /= s[j];
    }
  } else {  // attn_out: the V rows of c_attn (2d .. 3d-1) and their bias
    const int d = m.config().d_model;
    float* cw = m.param(layer + "attn.c_attn.weight");
    float* cb = m.param(layer + "attn.c_attn.bias");
    for (int j = 0; j < in; ++j) {
      float* row = cw + static_cast<int64_t>(2 * d + j) * d;
      for (int c = 0; c < d; ++c) row[c] /= s[j];
      cb[2 * d + j] /= s[j];
    }
  }
}

}  // namespace lab

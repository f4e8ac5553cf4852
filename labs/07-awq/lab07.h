// Lab 07: AWQ, the functions you write, declared beside the library's (src/minigpt/channel_stats.h, awq.cpp,
// scale_fold.h) in namespace `lab`. The grader (`miniquant lab check 07`) compares them with the library's on
// real MiniGPT Linears and runs your AWQ on the whole model. Do not edit this header.
#pragma once
#include <cstdint>
#include <vector>

#include <Eigen/Core>

#include "miniquant/format.h"
#include "minigpt/model.h"

namespace lab {

// Block A. The activation magnitude AWQ ranks input channels by: mean |x_j| over the n rows of x (n, in),
// accumulated in double.  Returns (in).
std::vector<float> channel_mean_abs(const float* x, int64_t n, int64_t in);

// Block B. Salient channels kept in fp16. top_channels: the ceil(fraction * size) channels of largest
// importance, ties to the lower index, in increasing channel order. keep_salient_fp16: w (out, in) quantized
// to `s` by round-to-nearest (mq::quantize) and dequantized, except the columns in `keep`, which hold
// fp16(w) (mq::f32_to_f16 / f16_to_f32).  Returns (out, in).
std::vector<int64_t> top_channels(const std::vector<float>& importance, double fraction);
std::vector<float> keep_salient_fp16(const float* w, int64_t out, int64_t in, const mq::Scheme& s, const std::vector<int64_t>& keep);

// Block C. The AWQ scale search on one Linear: for alpha = i / 19, i = 0 .. 19, s_j = max(m_j, 1e-4)^alpha
// normalised by sqrt(max(s) min(s)); W' = dequant(Q(W diag(s))) diag(1/s); its output error tr((W - W') H (W - W')^T)
// (mq::output_error). The alpha of least error (the first on ties), its scales, that error, and alpha = 0's.
// w: (out, in);  mean_abs: (in);  h: (in, in).
struct AwqChoice {
  std::vector<float> scales;
  double alpha = 0, error = 0, plain_error = 0;
};
AwqChoice awq_search(const float* w, int64_t out, int64_t in, const std::vector<float>& mean_abs, const Eigen::MatrixXd& h,
                     const mq::Scheme& s);

// Block D. Folds the scale into the fp32 model so its function is unchanged: the Linear's weight columns times
// s_j, its input's producer divided by s_j: ln_1 (weight and bias) for qkv, ln_2 for mlp_up, the V rows of
// c_attn (rows 2d .. 3d-1 and their bias) for attn_out. mlp_down (after GELU) cannot: throw mq::UsageError.
// Model::param("h.0.ln_1.weight") gives a parameter's fp32 values.
void fold_input_scale(minigpt::Model& m, const minigpt::LinearInfo& li, const std::vector<float>& s);

}  // namespace lab

// What an activation-aware method reads of a Linear's inputs on calibration data: per input channel
// the mean and the largest magnitude, and the second moment H = X^T X / n that scores a weight by its
// output error (mq::output_error, gptq.h: tr((W - W') H (W - W')^T) = mean ||W x - W' x||^2 over the calibration rows).
#pragma once
#include <map>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "minigpt/model.h"

namespace minigpt {

struct ChannelStats {
  std::vector<float> mean_abs;  // (in) mean |x_j| over the calibration rows
  std::vector<float> max_abs;   // (in) max |x_j|
  Eigen::MatrixXd h;            // (in, in) X^T X / n
  // (m, in) calibration rows themselves, every kSampleStride-th up to kSampleRows: what a method that quantizes
  // the activations too (SmoothQuant) needs to score a candidate, since H does not see the per-token int8 rounding.
  Eigen::MatrixXf rows;
  // (windows * window, in) the rows of the first calibration windows whole, in order (at most kBlockRows): what a
  // block that mixes positions (attention) needs to score a candidate weight by its own output (transform_block.h);
  // empty for the kinds keeps_windows() leaves out.
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> window_rows;
  int window = 0;  // rows per kept window (the calibration windows' length)
  int64_t samples = 0;
  double outlier_ratio() const;  // of max_abs (below)
};

// Which calibration rows ChannelStats::rows keeps: every 32nd row the Linear sees (16,384 rows in 128 windows of
// 128: 512 kept), at most 512.
inline constexpr int64_t kSampleStride = 32, kSampleRows = 512;
// How many rows of whole calibration windows ChannelStats::window_rows keeps: every window that fits in 16,384 rows,
// which are all of the plans' default calibration on MiniGPT (128 windows of 128 tokens), so that AWQ scores its
// scales on every calibration token there, as llm-awq does; a model with longer windows keeps fewer of them (the
// bound is the memory: 16,384 x in floats per kept Linear). On 16 windows (2,048 rows, each story separator among
// them about 60 times: the positions where MiniGPT's errors concentrate) AWQ then GPTQ at int3-g64 had KLD 4.54e-4,
// on all 128 3.86e-4 (GPTQ alone 3.94e-4; the scales searched on the fp32 model in both).
inline constexpr int64_t kBlockRows = 16384;
// The Linears whose whole windows are kept: those AWQ scores by the output of the block they feed (transform_block.h:
// the attention for qkv, GELU and mlp_down for mlp_up); the others are scored exactly from H. At 128 windows of
// 128 tokens a kept input is 8 MiB per 128 input channels.
inline bool keeps_windows(LinearKind kind) { return kind == LinearKind::qkv || kind == LinearKind::mlp_up; }

// The largest of per-channel magnitudes over their median: how far the largest input channel stands out (1 = none).
double outlier_ratio(const std::vector<float>& max_abs);

// One pass of `m` over `windows`, every Linear named in `names` (all when empty) observed. The model's
// hook is restored to none afterwards. mq::UsageError when there are no windows.
std::map<std::string, ChannelStats> collect_channel_stats(Model& m, const std::vector<std::vector<int32_t>>& windows,
                                                          const std::vector<std::string>& names = {});

}  // namespace minigpt

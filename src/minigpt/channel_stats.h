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
  // (kBlockWindows * window, in) the rows of the first kBlockWindows calibration windows whole, in order: what a
  // block that mixes positions (attention) needs to score a candidate weight by its own output (transform_block.h).
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> window_rows;
  int window = 0;  // rows per kept window (the calibration windows' length)
  int64_t samples = 0;
  double outlier_ratio() const;  // of max_abs (below)
};

// Which calibration rows ChannelStats::rows keeps: every 32nd row the Linear sees (16,384 rows in 128 windows of
// 128: 512 kept), at most 512.
inline constexpr int64_t kSampleStride = 32, kSampleRows = 512;
// How many whole calibration windows ChannelStats::window_rows keeps: 16 of 128 tokens (2,048 rows, each story
// separator among them about 60 times: the positions where MiniGPT's errors concentrate).
inline constexpr int kBlockWindows = 16;

// The largest of per-channel magnitudes over their median: how far the largest input channel stands out (1 = none).
double outlier_ratio(const std::vector<float>& max_abs);

// One pass of `m` over `windows`, every Linear named in `names` (all when empty) observed. The model's
// hook is restored to none afterwards. mq::UsageError when there are no windows.
std::map<std::string, ChannelStats> collect_channel_stats(Model& m, const std::vector<std::vector<int32_t>>& windows,
                                                          const std::vector<std::string>& names = {});

}  // namespace minigpt

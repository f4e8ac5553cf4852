// The error a candidate weight leaves in the output of the block its Linear feeds, on calibration windows: how
// AWQ scores its scale candidates (llm-awq's "module2inspect": the attention for q/k/v, the MLP for its first
// Linear). A Linear's own output error counts every output channel alike; the block's does not. Q and K errors
// pass through the softmax, and the MLP's first Linear through GELU, where a negative pre-activation's error
// vanishes and the second Linear weights the rest. Scored by its own output, MiniGPT's mlp_up takes scales that
// leave 9x RTN's KL divergence on the tokens after a story separator (experiments/26-quant-curve, AWQ rows).
#pragma once
#include <functional>

#include "minigpt/channel_stats.h"
#include "minigpt/model.h"

namespace minigpt {

// Mean over the calibration rows of || block(x; weight) - block(x; fp32) ||^2, with `weight` (out, in) standing
// in for the Linear's and everything else of the block in fp32.
using BlockError = std::function<double(const float* weight)>;

// The block error of `li` in `m` over `st.window_rows` (whole calibration windows, channel_stats.h):
//   qkv    -> causal attention, then attn_out's Linear (biases cancel in the difference but qkv's is kept:
//             it moves the softmax);
//   mlp_up -> GELU, then mlp_down's Linear;
// empty for attn_out and mlp_down, whose own output is the block's (then tr(dW H dW^T), mq::output_error,
// scores it exactly), and when `st` kept no windows. The function holds pointers into `m`'s weights: it is
// valid while those are not changed.
BlockError block_error(const Model& m, const LinearInfo& li, const ChannelStats& st);

}  // namespace minigpt

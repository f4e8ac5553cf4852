// block_error(): the output of the attention or the MLP a Linear feeds, with a candidate weight in its place.
#include "minigpt/transform_block.h"

#include <memory>

#include <Eigen/Dense>

#include "minigpt/ops.h"

namespace minigpt {

namespace {
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

const LinearInfo* find_linear(const std::vector<LinearInfo>& all, int layer, LinearKind kind) {
  for (const LinearInfo& li : all)
    if (li.layer == layer && li.kind == kind) return &li;
  return nullptr;
}

// What the block computes from the Linear's output y (rows, out): the second Linear's input.
struct Block {
  RowMat x;              // (rows, in) the Linear's calibration input, whole windows
  const float* bias;     // (out) the Linear's bias, or null
  int out = 0;
  const float* next;     // (d, out') the block's second Linear (attn_out or mlp_down), fp32 master weight
  int next_out = 0, next_in = 0;
  bool attention = false;  // qkv: causal attention between; mlp_up: GELU
  int windows = 0, window = 0, heads = 0;
  RowMat reference;      // (rows, next_out) the block's output with the fp32 weight

  RowMat run(const float* weight) const {
    const Eigen::Map<const RowMat> w(weight, out, x.cols());
    RowMat y = x * w.transpose();  // (rows, out)
    if (bias) y.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias, out);
    RowMat mid(y.rows(), next_in);  // (rows, next_in) what the second Linear reads
    if (attention) {
      std::vector<float> probs(static_cast<size_t>(windows) * heads * window * window);  // (B, H, T, T)
      ops::attention_forward<float>(y.data(), windows, window, next_in, heads, mid.data(), probs.data());
    } else {
      ops::gelu_forward<float>(y.data(), static_cast<long>(y.size()), mid.data());
    }
    return mid * Eigen::Map<const RowMat>(next, next_out, next_in).transpose();  // (rows, next_out)
  }
};
}  // namespace

BlockError block_error(const Model& m, const LinearInfo& li, const ChannelStats& st) {
  if (!keeps_windows(li.kind)) return {};
  if (st.window_rows.rows() == 0 || st.window <= 0 || st.window_rows.cols() != li.in || !li.weight) return {};
  const std::vector<LinearInfo> all = m.linears();
  const LinearInfo* next = find_linear(all, li.layer, li.kind == LinearKind::qkv ? LinearKind::attn_out : LinearKind::mlp_down);
  if (!next || !next->weight) return {};
  auto b = std::make_shared<Block>();
  b->x = st.window_rows;
  b->bias = li.bias;
  b->out = li.out;
  b->next = next->weight;
  b->next_out = next->out;
  b->next_in = next->in;
  b->attention = li.kind == LinearKind::qkv;
  b->window = st.window;
  b->windows = static_cast<int>(st.window_rows.rows() / st.window);
  b->heads = m.config().n_head;
  b->reference = b->run(li.weight);
  return [b](const float* weight) {
    return static_cast<double>((b->run(weight) - b->reference).squaredNorm()) / static_cast<double>(b->x.rows());
  };
}

}  // namespace minigpt

// The equivalence transforms a recipe can run before it quantizes: each moves an input-channel scale
// between a Linear and what feeds it (scale_fold.h), chosen from calibration statistics (channel_stats.h),
// so the fp32 model computes the same function and the quantizer meets easier numbers. One row per
// method, named by its recipe suffix ("int4-g128-awq", "int8-per-channel-smooth+a8"): the recipe parser,
// the CLI, the sweep, quant maps, GGUF export and the labs take a method from this table and nowhere else.
// How to add one: docs/ARCHITECTURE.md, "How to add a method".
#pragma once
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <Eigen/Dense>

#include "miniquant/format.h"
#include "miniquant/quantize.h"
#include "miniquant/kernels/kernels.h"
#include "minigpt/channel_stats.h"
#include "minigpt/model.h"
#include "minigpt/transform_block.h"

namespace minigpt {

// What a method sees of one Linear: its fp32 weight (out, in), its input statistics, and how the recipe
// will store and run it afterwards.
struct TransformInput {
  const LinearInfo& linear;
  const ChannelStats& stats;
  const mq::Scheme& scheme;
  mq::ActMode act;
  // The error a candidate weight leaves in the output of the block the Linear feeds (transform_block.h), or
  // empty where the Linear's own output is the block's: AWQ scores its candidates by it.
  BlockError block_error = {};
  // How the recipe quantizes the Linear after the method: the codes of a weight `w` (the Linear's out, in) whose input
  // has the second moment `h` (the plain grid, the -search / -imatrix grid, or GPTQ with the plan's options); empty means
  // mq::quantize on the plain grid. AWQ scores its candidates with it, so "-awq-gptq" picks the scale GPTQ does best on.
  std::function<mq::QTensor(const float* w, const Eigen::MatrixXd& h)> quantize = {};
  // Whether that quantizer rounds to nearest on the plain grid: the one AWQ's clip search is for (a searched grid
  // shrinks its range by itself, and a clipped range takes away what GPTQ's error feedback would use).
  bool round_to_nearest = true;
};
struct TransformResult {
  std::vector<float> scales;  // (in) the input-channel scale s: W -> W diag(s), x -> x / s
  std::string note;           // one line for the quantization report (what was chosen, what it bought)
  // (out, in) the scaled weight the method wants quantized in place of W diag(s) (AWQ's clipped one), or empty.
  // Unlike the scale this changes the fp32 function: the folded model computes what the original does only
  // before it is written.
  std::vector<float> weight = {};
};

struct TransformMethod {
  std::string_view suffix;  // the recipe suffix without its dash: "awq"
  std::string_view title;   // one line saying what it does (the docs quote it)
  // Empty when the method can precede a recipe of `scheme` run with `act`; else why not (a usage error).
  std::string (*refuses)(const mq::Scheme& scheme, mq::ActMode act);
  TransformResult (*scales)(const TransformInput& in);
};

// Every method, in table order.
std::span<const TransformMethod> transform_table();
// The row named `suffix`, or null.
const TransformMethod* find_transform(std::string_view suffix);

// The methods' own files (awq.cpp, smoothquant.cpp).
std::string awq_refuses(const mq::Scheme& scheme, mq::ActMode act);
TransformResult awq_scales(const TransformInput& in);
std::string smoothquant_refuses(const mq::Scheme& scheme, mq::ActMode act);
TransformResult smoothquant_scales(const TransformInput& in);

}  // namespace minigpt

// The one way to quantize a MiniGPT: a model and a plan in, the quantized model (its projections and
// embedding swapped in place) and a per-Linear report out. RTN, or GPTQ with calibration on held-out
// windows, layer by layer in order (later layers calibrated on the outputs of the quantized ones).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "miniquant/hessian.h"
#include "miniquant/format.h"
#include "miniquant/quantize.h"
#include "minigpt/model.h"
#include "minigpt/quant_plan.h"

namespace minigpt {

struct LinearQuantReport {
  std::string name;
  int64_t in = 0, out = 0;
  std::string recipe;            // the plan's recipe for this Linear, e.g. "int4-g64-gptq"
  mq::Storage storage;
  double seconds = 0.0;          // quantization (and, sequential GPTQ, its calibration pass)
  bool has_hessian = false;
  mq::HessianStats hessian;      // recipes with calibration only (GPTQ, -imatrix)
  double output_error_rtn = 0.0;   // tr((W-Q) H (W-Q)^T) of round-to-nearest (recipes with calibration only)
  double output_error = 0.0;       // the same for the chosen method (recipes with calibration only)
  std::vector<std::string> notes;  // solver notes (damping retries, dead columns)
};

struct ModelQuantReport {
  std::vector<LinearQuantReport> layers;  // the Linears that were quantized, in model order
  double calibration_seconds = 0.0;
  double total_seconds = 0.0;
};

// Quantizes `m` in place as `plan` says: each Linear whose recipe is not fp32 gets a
// QuantizedProjection in its recipe's scheme and activation mode; then the embedding is stored as the
// plan says. The fp32 master weights stay as they were, except where a recipe runs an equivalence transform
// (AWQ, SmoothQuant: transform_table.h): it rescales them first, leaving the fp32 function unchanged to rounding. `calibration` (windows of tokens from a
// held-out split) is needed when the plan uses GPTQ or -imatrix (whose importance is the diagonal of each
// Linear's calibration Hessian, collected as GPTQ collects it). Throws mq::UsageError for a plan that does not
// fit the model, GPTQ without calibration, or a model without fp32 master weights (loaded from a
// quantized checkpoint).
ModelQuantReport quantize_model(Model& m, const QuantPlan& plan, const std::vector<std::vector<int32_t>>& calibration = {});

// The stored weight of every Linear that runs quantized (Linear name -> its QTensor), in model order:
// what a checkpoint or an export writes of the model as quantize_model (or a quantized checkpoint) left it.
// mq::UsageError for a model split by inference phase (PhaseProjection): files store one recipe per Linear.
std::vector<std::pair<std::string, mq::QTensor>> stored_weights(const Model& m);

}  // namespace minigpt

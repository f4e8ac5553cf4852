// Quantizing every Linear of a MiniGPT, by round-to-nearest or by GPTQ with calibration on held-out
// windows, layer by layer in order (later layers calibrated on the outputs of the quantized ones).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "miniquant/gptq.h"
#include "miniquant/hessian.h"
#include "miniquant/kernels/kernels.h"
#include "minigpt/model.h"

namespace minigpt {

struct QuantizeModelOptions {
  mq::Scheme scheme = mq::Scheme::integer(4, 64);
  bool gptq = false;
  mq::GptqOptions gptq_options;
  // GPTQ only: quantize Linears in model order and collect each one's Hessian with the earlier
  // ones already quantized (false: one calibration pass on the fp32 model for all of them).
  bool sequential = true;
  // How the kernels run the stored weights: fp32 activations, or activations quantized per token
  // to int8 (the dynamic path, int8 / int4 weights only). Storage is the same either way.
  mq::ActMode act = mq::ActMode::weight_only;
};

struct LinearQuantReport {
  std::string name;
  int64_t in = 0, out = 0;
  mq::Storage storage;
  double seconds = 0.0;          // quantization (and, sequential GPTQ, its calibration pass)
  bool has_hessian = false;
  mq::HessianStats hessian;      // GPTQ only
  double output_error_rtn = 0.0;   // tr((W-Q) H (W-Q)^T) of round-to-nearest (GPTQ only)
  double output_error = 0.0;       // the same for the chosen method (GPTQ only)
  std::vector<std::string> notes;  // solver notes (damping retries, dead columns)
};

struct ModelQuantReport {
  std::vector<LinearQuantReport> layers;
  double calibration_seconds = 0.0;
  double total_seconds = 0.0;
};

// Options for a scheme name as the CLI and the sweep take it: a scheme of the format table, with
// "-gptq" appended for GPTQ (integer schemes only) and then "+a8" for dynamic int8 activations
// (int8 / int4 schemes only), e.g. "int4-g64-gptq+a8"; the other options keep their defaults.
// Throws mq::UsageError naming the scheme when it is unknown or GPTQ / +a8 cannot apply.
QuantizeModelOptions quantize_options_for(const std::string& name);

// Wraps quantized storage into the projection the model will run (kernels live behind it).
using ProjectionFactory = std::function<std::unique_ptr<Projection>(mq::QTensor)>;

// Quantizes every Linear of `m` in place (its projections are swapped; the fp32 master weights
// stay as they were). `calibration` (windows of tokens from a held-out split) is needed for GPTQ.
// `quantized`, when given, receives each layer's storage (name -> QTensor) for saving.
ModelQuantReport quantize_linears(Model& m, const QuantizeModelOptions& o,
                                  const std::vector<std::vector<int32_t>>& calibration, const ProjectionFactory& make,
                                  std::vector<std::pair<std::string, mq::QTensor>>* quantized = nullptr);

}  // namespace minigpt

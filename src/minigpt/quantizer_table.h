// The quantizers a recipe can choose a Linear's codes with, one row per recipe suffix: round-to-nearest (no
// suffix), "-search" (the shrink grid), "-imatrix" (the grid weighted by the calibration Hessian's diagonal),
// "-fisher" (the K search weighted per weight by the loss's Fisher diagonal). "-gptq" composes with a row: GPTQ
// runs the row's search for each group's scales (mq::GptqOptions::search), where the row allows it. The recipe
// parser and printer (quant_plan.h) and quantize_model's one call (quantize_linear) read this table and nowhere
// else names a quantizer; the equivalence transforms have theirs (transform_table.h).
// How to add one: docs/ARCHITECTURE.md, "How to add a method".
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <Eigen/Dense>

#include "miniquant/quantize.h"

namespace minigpt {

// What a quantizer sees of one Linear.
struct QuantizerInput {
  const float* weight;  // (out, in) fp32, row-major
  int64_t out = 0, in = 0;
  const mq::Scheme& scheme;
  const Eigen::MatrixXd* hessian = nullptr;  // (in, in) calibration second moment E[x x^T]; set where the row needs_hessian
  const float* fisher = nullptr;             // (out, in) per-weight Fisher diagonal; set where the row needs_fisher
  const std::string& name;                   // the tensor, for messages
};

struct QuantizerMethod {
  mq::Search search;        // the recipe's field (LinearRecipe::search) this row sets
  std::string_view suffix;  // the recipe suffix without its dash ("imatrix"); "" for round-to-nearest
  std::string_view title;   // one line saying what it does (the docs quote it)
  bool needs_hessian;       // reads the Linear's calibration second moment
  bool needs_fisher;        // reads the Fisher pass (gradients on the fp32 model before any Linear is quantized)
  bool with_gptq;           // "-<suffix>-gptq" is a recipe: GPTQ runs this row's search
  // A phase's own stored copy (phase_projection.h; quantized from fp32 without calibration) may take it.
  bool phase_copy;
  // Empty when the row can quantize `scheme`; else why not (a usage error).
  std::string (*refuses)(const mq::Scheme& scheme);
  mq::QTensor (*quantize)(const QuantizerInput& in);
  // Integer schemes: the row's own chooser of a group's grid, which GPTQ's group step runs under "-<suffix>-gptq"
  // (mq::GptqOptions::grid); null where the row's grid is the library's (its mq::Search value decides).
  mq::GridChooser grid;
};

// -hqq (quantizer_hqq.cpp): Half-Quadratic Quantization's grid fit, calibration-free.
mq::Grid hqq_grid(const float* v, int64_t n, const float* importance, int64_t period, const mq::Scheme& s, std::string_view name, int64_t index);
std::string hqq_refuses(const mq::Scheme& s);
mq::QTensor hqq_quantize(const QuantizerInput& q);

// Every quantizer, in table order (round-to-nearest first).
std::span<const QuantizerMethod> quantizer_table();
// The row of `search`; every mq::Search value has one (mq::Error otherwise: a value added without its row).
const QuantizerMethod& quantizer_for(mq::Search search);

}  // namespace minigpt

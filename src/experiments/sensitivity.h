// Layer sensitivity in miniature (the lab 05 form of experiments/27-mixed-epi's sensitivity units): how much
// KL divergence from the fp32 model each Linear adds when it alone is quantized, everything else fp16. The
// study measures the same difference on the test split's windows (mixed.cpp); this form takes any windows.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "minigpt/model.h"

namespace mqexp {

// KL(p || q) of one position's next-token distributions from their logits (V each), in double.
double kl_of_logits(const float* p_logits, const float* q_logits, int V);

// Mean KL(reference || m) over every position of every window (one forward pass of each model per window).
double mean_kl(const minigpt::Model& reference, const minigpt::Model& m, const std::vector<std::vector<int32_t>>& windows);

// Per Linear, in linears() order: mean_kl of the model with that Linear alone in `recipe` (round-to-nearest)
// and everything else fp16 (QuantPlan::uniform("fp16"), embedding included), minus mean_kl of the all-fp16
// model. `fresh()` returns a new fp32 copy of the checkpoint each call. mq::UsageError for a GPTQ recipe.
std::vector<double> linear_sensitivity(const std::function<minigpt::Model()>& fresh, const std::vector<std::vector<int32_t>>& windows,
                                       const std::string& recipe);

}  // namespace mqexp

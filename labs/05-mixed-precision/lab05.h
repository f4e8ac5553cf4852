// Lab 05: the functions you write, declared with the library's signatures (src/minigpt/quant_plan.h,
// src/experiments/divergence.h, allocate.h, epi.h) in namespace `lab`. The grader (`miniquant lab check 05`)
// compares each with the library's: your quant-map parser on good and bad maps, your KL divergence and layer
// sensitivities inside the real MiniGPT, your bit allocation against brute force, your EPI frontier on paired
// rounds; then your run of `miniquant mixed` and your answers. Do not edit this header.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/allocate.h"
#include "experiments/epi.h"
#include "minigpt/model.h"
#include "minigpt/quant_plan.h"

namespace lab {

// Block A. A quant map (JSON) as a plan, with QuantPlan::from_json's rules: keys config_id and default
// (required), layer_groups, tensors, embedding, gptq (optional, "phases" may be refused); layer-group rules
// first, then tensor-kind rules. mq::UsageError, its message one line starting with `where`, for anything else.
minigpt::QuantPlan quant_map_from_json(const nlohmann::json& j, const std::string& where);
// Block A. The recipe of one Linear: the last rule that matches it, else the plan's default.
minigpt::LinearRecipe recipe_for(const minigpt::QuantPlan& plan, int layer, minigpt::LinearKind kind);

// Block B. KL(p || q) of the next-token distributions softmax(p_logits) and softmax(q_logits) (vocab each),
// in nats, computed in double without overflow for any finite logits.
double kl_divergence(const float* p_logits, const float* q_logits, int vocab);
// Block B. Each Linear's sensitivity, in linears() order: the mean KL (over every position of every window) of
// the model with that Linear alone in `recipe` (round-to-nearest) and everything else fp16
// (QuantPlan::uniform("fp16")), minus the mean KL of the all-fp16 model, both against the fp32 model.
// `fresh()` returns a new fp32 copy of the checkpoint each call (a Model cannot be copied).
std::vector<double> linear_sensitivity(const std::function<minigpt::Model()>& fresh, const std::vector<std::vector<int32_t>>& windows,
                                       const std::string& recipe);

// Block C. Every allocation no other beats (fewer or equal bytes and lower cost, or fewer bytes and equal cost),
// by bytes ascending: the exact multiple-choice knapsack frontier. mq::UsageError for an item without options.
std::vector<mqexp::Allocation> allocation_frontier(const std::vector<mqexp::AllocItem>& items);
// Block C. The cheapest allocation of `frontier` within `budget` bytes, or nullopt when none fits.
std::optional<mqexp::Allocation> best_within(const std::vector<mqexp::Allocation>& frontier, long long budget);

// Block D. Energy per intelligence: J/token over accuracy (+infinity at accuracy 0; mq::Error for a negative or
// non-finite input).
double epi(double joules_per_token, double accuracy);
// Block D. The ids on the accuracy-vs-J/token frontier, in input order (paired ratios over the rounds decide
// "cheaper"; see the handout).
std::vector<std::string> epi_frontier(const std::vector<mqexp::EpiPoint>& points);
// Block D. The id with the lowest mean J/token over accuracy.
std::string epi_optimal(const std::vector<mqexp::EpiPoint>& points);

}  // namespace lab

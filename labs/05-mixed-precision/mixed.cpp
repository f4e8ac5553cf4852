// Lab 05 (see README.md next to this file): per-layer mixed precision. Replace each TODO body; keep the
// signatures (lab05.h). Blocks A-D are here; block E is your `miniquant mixed` run and answers.md.
// Grade with `miniquant lab check 05`.
// Call your own functions qualified (lab::recipe_for(...)): with library arguments an unqualified call also
// finds the library's function of the same name by argument-dependent lookup and is ambiguous.
#include "lab05.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"  // mq::json_int: an integer in a range, or an error naming it
#include "minigpt/quantize_model.h"       // minigpt::quantize_model(model, plan)

namespace lab {

minigpt::QuantPlan quant_map_from_json(const nlohmann::json& j, const std::string& where) {
  // TODO(lab 05 block A): the keys, their types, the rules in order, the embedding default, the gptq settings.
  (void)j, (void)where;
  throw std::logic_error("lab 05 block A: not implemented yet (quant_map_from_json in labs/05-mixed-precision/mixed.cpp)");
}

minigpt::LinearRecipe recipe_for(const minigpt::QuantPlan& plan, int layer, minigpt::LinearKind kind) {
  // TODO(lab 05 block A): the last matching rule wins; none: the default.
  (void)plan, (void)layer, (void)kind;
  throw std::logic_error("lab 05 block A: not implemented yet (recipe_for in labs/05-mixed-precision/mixed.cpp)");
}

double kl_divergence(const float* p_logits, const float* q_logits, int vocab) {
  // TODO(lab 05 block B): log-softmax of both rows in double (subtract the max first), sum p (log p - log q).
  (void)p_logits, (void)q_logits, (void)vocab;
  throw std::logic_error("lab 05 block B: not implemented yet (kl_divergence in labs/05-mixed-precision/mixed.cpp)");
}

std::vector<double> linear_sensitivity(const std::function<minigpt::Model()>& fresh, const std::vector<std::vector<int32_t>>& windows,
                                       const std::string& recipe) {
  // TODO(lab 05 block B): the all-fp16 model's mean KL, then each Linear alone in `recipe`: its mean KL minus that.
  (void)fresh, (void)windows, (void)recipe;
  throw std::logic_error("lab 05 block B: not implemented yet (linear_sensitivity in labs/05-mixed-precision/mixed.cpp)");
}

std::vector<mqexp::Allocation> allocation_frontier(const std::vector<mqexp::AllocItem>& items) {
  // TODO(lab 05 block C): partial allocations item by item, keeping only the non-dominated ones.
  (void)items;
  throw std::logic_error("lab 05 block C: not implemented yet (allocation_frontier in labs/05-mixed-precision/mixed.cpp)");
}

std::optional<mqexp::Allocation> best_within(const std::vector<mqexp::Allocation>& frontier, long long budget) {
  // TODO(lab 05 block C): the frontier is sorted by bytes: the last point that fits is the cheapest.
  (void)frontier, (void)budget;
  throw std::logic_error("lab 05 block C: not implemented yet (best_within in labs/05-mixed-precision/mixed.cpp)");
}

double epi(double joules_per_token, double accuracy) {
  // TODO(lab 05 block D): J/token over accuracy.
  (void)joules_per_token, (void)accuracy;
  throw std::logic_error("lab 05 block D: not implemented yet (epi in labs/05-mixed-precision/mixed.cpp)");
}

std::vector<std::string> epi_frontier(const std::vector<mqexp::EpiPoint>& points) {
  // TODO(lab 05 block D): drop every point another beats (more accurate or as accurate, and cheaper by paired ratio).
  (void)points;
  throw std::logic_error("lab 05 block D: not implemented yet (epi_frontier in labs/05-mixed-precision/mixed.cpp)");
}

std::string epi_optimal(const std::vector<mqexp::EpiPoint>& points) {
  // TODO(lab 05 block D): the lowest mean J/token over accuracy.
  (void)points;
  throw std::logic_error("lab 05 block D: not implemented yet (epi_optimal in labs/05-mixed-precision/mixed.cpp)");
}

}  // namespace lab

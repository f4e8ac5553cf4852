// The mixed-precision study's answers, computed from the merged configurations and their energy rounds:
// each configuration's J/token and EPI as paired ratios to fp32, the control, the perplexity-matched pairs
// with their paired EPI ratio, and the source's five research questions, each answered with intervals and
// every claim re-priced over the energy model's coefficient box (energy_robust.h):
//   RQ1 do maps with the same perplexity (within their ΔPPL intervals) differ in EPI?
//   RQ2 the accuracy-vs-J/token Pareto frontier: do mixed maps sit on it where no uniform map does?
//   RQ3 which layers / tensor kinds are most sensitive, in quality and in energy?
//   RQ4 is the EPI-optimal map smaller or larger than uniform 4-bit?
//   RQ5 do the savings come from bytes moved or from arithmetic (the model's decomposition per phase)?
// EPI = J/token / accuracy (mixed.cpp accuracy_of: the generalization benchmark's, paired by item for comparisons).
#pragma once
#include <optional>

#include <nlohmann/json.hpp>

#include "experiments/mixed.h"
#include "experiments/mixed_energy.h"
#include "miniquant/energy/model.h"

namespace mqexp {

// Adds each configuration's "energy" (J/token and speed by phase over the rounds, paired ratios to fp32) and
// "joules_per_token" / "epi" (means) to `configs` (by config_id), and returns the set's own record: rounds,
// machines, the control (fp32 measured twice) and the natural control (two ids naming one allocation).
nlohmann::json mixed_energy_json(const EnergySetData& e, const std::string& set, nlohmann::json& configs);

// The coefficients the study's modelled joules can be re-priced with, or nullopt with a real meter's joules.
std::optional<mq::energy::Coefficients> energy_coefficients(const MixedOptions& o);

// {"pairs": [...], "rq1".."rq5": {"answer", numbers...}, "statements": [...]}. `coeffs` null: no model to
// re-price with. `sensitivity`: merge_mixed's sensitivity record; n_layer: the model's layers (groups:
// early = layer 0, late = the last, middle = the rest).
nlohmann::json mixed_answers(const nlohmann::json& configs, const EnergySetData& e, const mq::energy::Coefficients* coeffs,
                             const nlohmann::json& sensitivity, int n_layer);

}  // namespace mqexp

// Equivalence transforms (AWQ, SmoothQuant) measured against the same recipe without them: which sweep rows
// pair up, the paired KLD ratio and accuracy difference of each pair, their JSON, and the report section with
// the goals stated as met or missed.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/results.h"

namespace mqexp {

// The row name without its transform ("int4-g128-awq-gptq" -> "int4-g128-gptq") and the transform's suffix,
// or {"", ""} for a name that is not a uniform recipe with a transform.
std::pair<std::string, std::string> without_transform(const std::string& scheme);

// Every ok row with a transform whose baseline also ran, both with a divergence from the same pass (their
// window KLs in memory: call right after evaluate_divergence).
std::vector<MethodComparison> compare_methods(const std::vector<SchemeRow>& rows);

nlohmann::json to_json(const MethodComparison& c);
MethodComparison method_comparison_from_json(const nlohmann::json& j);

// The README section: one line per pair, then per method whether every pair is below its baseline beyond the
// interval (AWQ's goal on RTN), and whether AWQ+GPTQ and SmoothQuant are at or below theirs. "" when none ran.
// `outliers` (SweepResults::activation_outliers) adds one line per Linear kind: the range over layers.
std::string method_comparison_section(const std::vector<MethodComparison>& cs, const std::map<std::string, double>& outliers = {});

}  // namespace mqexp

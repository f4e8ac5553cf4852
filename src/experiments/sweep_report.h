// The sweep's README block, written from the typed results and the manifest alone: the results tables
// and the answers (Pareto frontier, GPTQ's perplexity gap, INT4's speed-up by the roofline against the
// measured one, the scheme for a Raspberry Pi). Regenerated on every run, so its numbers are the run's;
// every number in its prose comes from the data.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "experiments/results.h"

namespace mqexp {

std::string sweep_readme_block(const SweepResults& results, const nlohmann::json& manifest);

}  // namespace mqexp

// The sweep's README block, written from results.json alone: the results tables and the answers
// (Pareto frontier, GPTQ's perplexity gap, INT4's speed-up by the roofline against the measured
// one, the scheme for a Raspberry Pi). Regenerated on every run, so its numbers are the run's.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace mqexp {

std::string sweep_readme_block(const nlohmann::json& results, const nlohmann::json& manifest);

}  // namespace mqexp

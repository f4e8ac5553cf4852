// experiments/28-energy's reader-facing text from summary.json alone: report.txt (summary per
// method, savings against float32, phase breakdown, batch curve) and the README's generated block
// (which method saves most and where, bytes or arithmetic, batching, what the model assumes).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace mqexp {

std::string energy_report_text(const nlohmann::json& summary);
std::string energy_readme_block(const nlohmann::json& summary);

}  // namespace mqexp

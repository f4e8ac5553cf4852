// experiments/28-energy's reader-facing text from summary.json alone: report.txt (summary per
// method, savings against float32, phase breakdown, batch curve) and the README's generated block
// (which method saves most and where, bytes or arithmetic, batching, what the model assumes).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace mqexp {

// Both need a summary of the shape check_energy_summary accepts (a summary `miniquant energy` wrote).
std::string energy_report_text(const nlohmann::json& summary);
std::string energy_readme_block(const nlohmann::json& summary);

// Checks that `summary` (read from `file`) has every field the two functions above read, with its type:
// mq::Error naming the file and the key otherwise (util/json_shape.h). `energy --report-only` calls it
// on the summary.json it redraws from.
void check_energy_summary(const nlohmann::json& summary, const std::string& file);

}  // namespace mqexp

// What experiments/27-mixed-epi derives from its merged units and how it shows them: the frontiers
// (accuracy against joules per token, KLD against bytes), perplexity-matched pairs, the answers to the
// study's five questions computed from the data, the README block and the terminal summary.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace mqexp {

// Adds to merge_mixed()'s results: per configuration on_epi_frontier / on_bytes_frontier, "pairs"
// (perplexity-matched: |PPL_a - PPL_b| within the larger half-width of their ΔPPL intervals) with their
// J/token and EPI differences, "identical_models" (same bytes, bit-identical PPL and KLD, measured as
// separate units) and "unit_noise_joules_ratio" (their largest J/token ratio: a pair's J/token differs only
// beyond it and beyond both repetition ranges), "allocation_vs_hand" (each hand-written map beside the allocated map of
// its budget), and "answers" (RQ1-RQ5, each a sentence and the numbers behind it).
void annotate_mixed(nlohmann::json& results);

// The README's generated block: machine and energy source, the configuration table, pairs, sensitivity,
// allocation, the answers.
std::string mixed_readme_block(const nlohmann::json& results, const nlohmann::json& manifest);

// "" when every unit ran on one machine; else one sentence: different CPUs (speeds and joules mix machines)
// or one CPU on several hosts, and how to report each machine alone. Empty in a per-machine report.
std::string mixed_machines_warning(const nlohmann::json& results);

// "" when merge_mixed found every unit; else "N units are not measured: kind/id, ..." (the first 20; "1 unit is").
std::string mixed_missing_line(const nlohmann::json& results);

// A few lines for the terminal: the frontier and the EPI-optimal configuration.
std::string mixed_summary_text(const nlohmann::json& results);

}  // namespace mqexp

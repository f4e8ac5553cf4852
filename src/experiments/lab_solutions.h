// The reference write-ups solutions/NN-topic-ref.md generated from
// the committed experiments' JSON (and, for lab 00's error table, the shipped checkpoint), so that no
// number in them is typed by hand. `miniquant lab solutions` writes them; `--check` and
// tests/labs/test_labs.cpp compare.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "experiments/lab_course.h"

namespace mqexp {

// (file name under solutions/, its text) for every lab, from root/experiments/*/results.json,
// manifest.json and root/data/minigpt.safetensors. mq::Error naming what is missing.
std::vector<std::pair<std::string, std::string>> lab_solutions(const std::string& root);

// Labs 04 and 05 (lab_solutions_energy.cpp): from experiments/28-energy/summary.json (+ manifest.json) and
// experiments/27-mixed-epi/results.json (+ manifest.json).
std::string solution_04(const std::string& root);
std::string solution_05(const std::string& root);

// The header every solution file opens with: title, the generated-file note, the handout, the provenance line.
std::string solution_header(const std::string& title, const LabInfo& lab, const std::string& provenance);

}  // namespace mqexp

// The lab course's table of labs, and the reference write-ups solutions/NN-topic-ref.md generated from
// the committed experiments' JSON (and, for lab 00's error table, the shipped checkpoint), so that no
// number in them is typed by hand. `miniquant lab solutions` writes them; `--check` and
// tests/labs/test_labs.cpp compare.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace mqexp {

struct LabInfo {
  std::string number;    // "00"
  std::string title;     // "quantizers"
  std::string dir;       // "00-quantizers" (under labs/)
  std::string file;      // the learner's file in that folder
  std::string solution;  // "solutions/00-quantizers-ref.md"
};
const std::vector<LabInfo>& lab_list();

// (file name under solutions/, its text) for every lab, from root/experiments/*/results.json,
// manifest.json and root/data/minigpt.safetensors. mq::Error naming what is missing.
std::vector<std::pair<std::string, std::string>> lab_solutions(const std::string& root);

}  // namespace mqexp

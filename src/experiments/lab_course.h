// The lab course's table (labs/NN-topic/): each lab's files, blocks and runs, whether a learner has started
// on its starter files (against the hashes recorded in labs/starters.sha256), and whether a grader binary is
// older than the files it was built from. `miniquant lab` and tests/labs/test_labs.cpp read it.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace mqexp {

struct LabInfo {
  std::string number;    // "00"
  std::string title;     // "quantizers"
  std::string dir;       // "00-quantizers" (under labs/)
  std::string file;      // the learner's source file in that folder
  std::string solution;  // "solutions/00-quantizers-ref.md"
  std::string blocks;    // "ABCDEF": the blocks, in order
  std::string file_blocks;    // the blocks whose TODO is in the learner's files (the others are runs)
  std::vector<std::string> starters;  // the files the learner edits, relative to the repository
  std::string run_dir;        // the learner's run folder (default), relative to the repository; "" none
  std::string reference_run;  // the committed run `--reference` grades, e.g. "experiments/26-quant-curve"
  bool times_kernels = false;  // its grader times code (lab 06): OpenMP keeps its default, spinning wait
  bool written = false;        // written answers without a run folder (labs 06, 07: answers.md, graded by their last block)
  // The learner's answers file (labs with a run folder, and `written` ones), relative to the repository; "" none.
  std::string answers() const { return run_dir.empty() && !written ? "" : "labs/" + dir + "/answers.md"; }
};
const std::vector<LabInfo>& lab_list();
// "0", "00", "3" -> the lab; mq::UsageError naming the labs for anything else.
const LabInfo& find_lab(const std::string& number);

// Where a learner is with a lab's starter files:
//   unchanged  every file has its recorded SHA-256 (labs/starters.sha256);
//   untouched  edited, but every block of file_blocks still throws "lab NN block X: not implemented yet";
//   started    at least one block's "not implemented" line is gone: the learner's work, to be graded.
enum class StarterState { unchanged, untouched, started };
StarterState starter_state(const std::string& root, const LabInfo& lab);
const char* starter_state_name(StarterState s);

// The files a lab's grader binary is built from that a learner (or a course author) edits: the learner's file
// and its header, the checks, the grading frame, the reference twin (reference grader only).
std::vector<std::filesystem::path> grader_sources(const std::string& root, const LabInfo& lab, bool reference);
// The first of `sources` modified after `binary` ("" when none is, or when the binary is missing).
std::string newer_source(const std::filesystem::path& binary, const std::vector<std::filesystem::path>& sources);

}  // namespace mqexp

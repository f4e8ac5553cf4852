// Whether a learner's run and written answers are the learner's own (labs 02, 04, 05): the committed reference
// run copied in as "my run", or the reference write-up's answers pasted in, pass every other check by design
// (they are what `--reference` grades), so the learner's grader refuses them here. The reference grader skips it.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "labs/grade.h"

namespace mqlab {

// Records "your own run": refused when the run folder's manifest.json is the committed run's (the same `date`),
// carries no date or one in the future, names another machine than the one grading (CPU model, logical CPUs),
// or when one of `files` is byte-identical to the committed run's file of that name.
void check_own_run(Checks& c, const std::string& run_dir, const std::string& committed_dir, const std::vector<std::string>& files);

// Records "your own answers": refused when an answer repeats half or more of the reference write-up's answer to
// the same question (its runs of 8 words, any case).
void check_own_answers(Checks& c, const std::map<int, std::string>& answers, const std::string& reference_path, int questions);

// Both, for lab `number`'s run folder and answers, against the committed run and write-up the course's table
// (experiments/lab_course.h) names: `files` are the run's files compared byte for byte.
void check_own_work(Checks& c, const LabOptions& o, const std::string& number, const std::string& run_dir, const std::vector<std::string>& files,
                    const std::map<int, std::string>& answers);

}  // namespace mqlab

// The lab grader's frame: a lab is a list of blocks (A, B, ...), each a function of the learner's
// file run through checks; a block passes when all its checks pass. The report prints every check
// as passed or failed with what was expected and what came out, then the lab's numeric bars.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mqlab {

struct Check {
  std::string name;
  bool passed = false;
  std::string expected, got;
  bool bar = false;  // one of the lab's numeric bars (the stop conditions of the handout)
};

// What a block's run function records its checks into.
class Checks {
 public:
  // Records one check; returns `ok` so a caller can stop early when later checks need this one.
  bool expect(bool ok, std::string name, std::string expected, std::string got);
  bool bar(bool ok, std::string name, std::string expected, std::string got);
  const std::vector<Check>& all() const { return checks_; }

 private:
  std::vector<Check> checks_;
};

struct Block {
  std::string id;     // "A", "B", ...
  std::string title;  // "symmetric_grid: the fp16 scale of a group"
  std::function<void(Checks&)> run;
  std::vector<std::string> bars;  // its numeric bars, listed as not measured when the block stops early
  // The library functions this block is graded against ("mq::gptq_quantize", or a class: "mq::Hessian"):
  // the learner's compiled file must not call them (twins.h), or the block would compare the library with itself.
  std::vector<std::string> twins;
};

// Where the lab binary finds its inputs (set from the command line).
struct LabOptions {
  std::string root;          // the repository (data/, experiments/)
  std::string run_dir;       // labs 02, 04, 05: the learner's `miniquant sweep / energy / mixed --out` folder
  std::string answers;       // labs 02, 04, 05, 07: the learner's answers to the lab's questions
  int64_t ppl_tokens = 8192; // perplexity checks score the test split's first tokens only
  std::string blocks;        // --block: grade only these blocks ("E", "CD"); "" every block
  bool learner = false;      // the learner's grader (not --reference): the run and answers must be the learner's own
};

struct Lab {
  std::string number;  // "00"
  std::string title;   // "quantizers"
  std::string file;    // the learner's file, relative to the repository
  std::vector<Block> blocks;
};

// Parses the options, runs every block (an exception ends its block: failed, with its message),
// prints the report and returns 0 when every block passed, 1 otherwise (2 for bad options).
// `learner_object`: the learner's compiled file, whose calls the blocks' twin checks read; "" (the
// reference grader) skips them.
// `graded_file`: the file the report names when it is not the lab's own (a learner-style solution under tests/labs/).
int run_lab(const std::function<Lab(const LabOptions&)>& make, int argc, char** argv, const std::string& learner_object,
            const std::string& graded_file);

// CMake defines MQ_LEARNER_OBJECT (the path of the learner's object file) for the learner's grader (and the
// learner-style solutions' graders) only, and MQ_LEARNER_FILE for the solutions' graders.
#ifndef MQ_LEARNER_OBJECT
#define MQ_LEARNER_OBJECT ""
#endif
#ifndef MQ_LEARNER_FILE
#define MQ_LEARNER_FILE ""
#endif
// static: each grader expands MQ_LEARNER_FILE with its own definition (one inline function would differ between them).
static inline int run_lab(const std::function<Lab(const LabOptions&)>& make, int argc, char** argv, const std::string& learner_object) {
  return run_lab(make, argc, argv, learner_object, MQ_LEARNER_FILE);
}

// Runs f; when it has not returned after `seconds`, prints that `what` is still running as a failure and ends
// the grader with exit 1 (a learner's exhaustive search must not hang the course's tests). Exceptions pass through.
void within_seconds(double seconds, const std::string& what, const std::function<void()>& f);

// Whether a manifest's checkpoint SHA-256 names the shipped data/minigpt.safetensors under `root`: its file's
// SHA-256, or its content's (minigpt::content_sha256: the file without the per-tensor checksums issue 37 added,
// the identity the mixed study keys its units by), so a run on the same weights before the checksums counts.
bool is_shipped_checkpoint(const std::string& sha256, const std::string& root);

// Number formatting for expected / got columns.
std::string num(double v, int digits = 6);
std::string pct(double fraction, int digits = 2);

}  // namespace mqlab

// Checking a learner's written answers against their own run: the numbers an answer cites must be in the
// run's JSON (or be one of the quantities the question asks for, derived by the grader from that JSON),
// rounded as printed, and the answer must name what the data says (the winner, the phase, the frontier).
// Words are not counted: an answer is graded by what it claims, not by its length.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "labs/grade.h"

namespace mqlab {

// The text under each "## N." heading of an answers file (N = 1..questions); a missing one is "".
std::map<int, std::string> answer_sections(const std::string& text, int questions);

// A number as an answer prints it: "15.27", "1.89x", "44%", "1.2e-05".
struct Cited {
  std::string text;
  double value = 0;
  double unit = 1;   // one unit of its last printed digit (0.01 for "15.27")
  int significant = 0;
  char suffix = 0;   // '%', 'x' or 0
};
// The numbers an answer cites. Digits inside names (int4-g64, fp32, h.3.mlp, L2, e2m8l2) are not numbers.
std::vector<Cited> cited_numbers(const std::string& text);

// Whether `c` is `v` as printed, rounded (within half a unit of c's last digit) or truncated (up to one unit
// above it): v read as it is, as a percentage (x100), in milli / micro / nano units (x1e3, 1e6, 1e9), in
// millions (x1e-6, MB) or in KiB / MiB.
bool printed_as(const Cited& c, double v);

// Every numeric leaf of a JSON tree.
void json_numbers(const nlohmann::json& j, std::vector<double>& out);

// A quantity a question asks for, derived by the grader from the run (e.g. "fp32 / int4-g64 decode bytes").
struct Fact {
  std::string what;
  double value = 0;
};

struct AnswerRules {
  AnswerRules(const std::vector<double>* leaves, std::vector<Fact> derived, std::vector<std::pair<std::string, std::vector<Fact>>> wanted,
              std::vector<std::string> names_all = {}, std::vector<std::string> names_any = {}, std::string names_what = "")
      : leaves(leaves), derived(std::move(derived)), wanted(std::move(wanted)), names_all(std::move(names_all)),
        names_any(std::move(names_any)), names_what(std::move(names_what)) {}
  const std::vector<double>* leaves = nullptr;  // every number of the run's JSON
  std::vector<Fact> derived;                    // + what the grader derives from it
  // The answer must cite at least one number (2 or more significant digits) from each of these groups: e.g.
  // {"the predicted speed-up", {...}}, {"the measured one", {...}}.
  std::vector<std::pair<std::string, std::vector<Fact>>> wanted;
  // The answer must name each of `names_all` and at least one of `names_any` (as whole names: "int4-g64"
  // does not name "int4-g64-gptq"); `names_what` says what they are, for the message.
  std::vector<std::string> names_all, names_any;
  std::string names_what;
  bool require_number = true;  // false for a question answered in words (its numbers are still looked up)
  // The answer must contain one of these (any case), e.g. {"model"} when the run's joules were modelled.
  std::vector<std::string> mentions_any;
  std::string mentions_what;
  // Of these words (any case; one preceded by "not " or "no " does not count), the first the answer uses must be
  // one of `claim_right`, not of `claim_wrong`: "Modelled, not measured" claims modelled.
  std::vector<std::string> claim_right, claim_wrong;
};

// Records the checks of answer `q`: every cited number with 3 or more significant digits is in the run
// (first one that is not, reported); the wanted numbers and names are there. A TODO left in it throws
// "lab NN block X: not implemented yet".
void check_answer(Checks& c, const std::string& lab_block, int q, const std::string& text, const AnswerRules& r);

// Whether `text` names `name` as a whole name (not as a prefix of a longer one, e.g. int4-g64 in int4-g64-gptq).
bool names(const std::string& text, const std::string& name);

}  // namespace mqlab

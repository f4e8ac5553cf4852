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
  // The scale the unit printed after it implies against the run's base units: 1e3 for "mJ" or "ms", 1e-6 for
  // "MB" or "million", 1/1024 for "KiB"; 0 when none is printed. A number is read at this scale or as it is.
  double scale = 0;
  size_t at = 0;     // where it starts in the text
};
// The numbers an answer cites. Digits inside names (int4-g64, fp32, h.3.mlp, L2, e2m8l2) are not numbers.
std::vector<Cited> cited_numbers(const std::string& text);

// Whether `c` is `v` as printed, rounded (within half a unit of c's last digit) or truncated (up to one unit
// above it): v read at the scale its printed unit implies ("1.36 mJ" is 0.00136 J, "44%" is 0.44, "2.8 MB" is
// 2.8e6 bytes), else as it is. A scale no unit states is not tried: "1.36" does not match 0.00136, "2.8 MB" not 2.8.
bool printed_as(const Cited& c, double v);

// An interval as an answer prints it, "[0.509, 0.530]" or "[-0.0037, +0.0011]": its ends, signed.
struct CitedInterval {
  Cited lo, hi;
};
std::vector<CitedInterval> cited_intervals(const std::string& text);

// Every numeric leaf of a JSON tree.
void json_numbers(const nlohmann::json& j, std::vector<double>& out);
// The numeric leaves under the fields a question asks about: paths such as "schemes.[].ppl" or
// "models.minigpt.methods.[].phases.*.joules_per_token" ("[]" any array element, "*" any key) name a field and
// everything below it. Per-round raw samples ("values", "outliers") are left out: an answer cites summaries.
std::vector<double> json_numbers_under(const nlohmann::json& j, const std::vector<std::string>& paths);
// The same over several objects (rows, methods, configurations), one after the other.
std::vector<double> json_numbers_under(const std::vector<const nlohmann::json*>& of, const std::vector<std::string>& paths);

// Every interval of these JSON trees: the ends of a "<x>_low" / "<x>_high" pair of one object ("ratio_ci95_low" and
// "ratio_ci95_high", "ci95_low" and "ci95_high") and the two numbers of an array under a key ending in "ci95".
std::vector<std::pair<double, double>> json_intervals(const std::vector<const nlohmann::json*>& of);

// A quantity a question asks for, derived by the grader from the run (e.g. "fp32 / int4-g64 decode bytes").
struct Fact {
  std::string what;
  double value = 0;
};

// Whose number is it: a cited number equal to one of `facts` must stand nearest (in its clause) to one of the
// `right` names, not to one of the `wrong` ones: "RTN 15.27, GPTQ 15.28" with the two values swapped is refused.
struct Attribution {
  std::vector<Fact> facts;
  std::vector<std::string> right, wrong;  // names, any case ("gptq", "int4-g64-gptq"; "rtn", "int4-g64")
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
  std::string claim_what;  // what the claim is about, for the message ("the direction of the change")
  // Intervals the answer must cite one of (both ends, as printed): e.g. the paired ratio's 95% interval.
  std::string interval_what;
  std::vector<std::pair<double, double>> intervals;
  // When not empty: every interval the answer cites ("[0.497, 0.505]") must be one of these, both ends as printed, so
  // an end that happens to equal some other number of the run does not pass (json_intervals of the rows asked about).
  std::vector<std::pair<double, double>> run_intervals;
  std::vector<Attribution> attributions;
  // "A beats B", "A is better than B", "A is worse than B": the name before the verb must be one of `better`
  // when the verb says better, of `worse` when it says worse (names as in Attribution).
  std::vector<std::string> better, worse;
  // Whose row a number is from: a cited number (3 or more significant digits) that is one of these names' numbers,
  // in a clause (between ". ", "; " or line breaks) that names any of them, must be a number of one the clause names:
  // "int4-g64 (2.72 MB, ...)" citing another scheme's bytes is refused.
  std::vector<std::pair<std::string, std::vector<double>>> owners;
  // Names that may appear only in a sentence that says they are not what the question asks for ("dominated",
  // "not", "beaten", ...): a dominated scheme listed among the frontier is refused.
  std::vector<std::string> names_only_negated;
  std::string negated_what;  // "schemes your results do not flag on the frontier"
};

// Records the checks of answer `q`: every cited number with 3 or more significant digits is in the run
// (first one that is not, reported); the wanted numbers and names are there. A TODO left in it throws
// "lab NN block X: not implemented yet".
void check_answer(Checks& c, const std::string& lab_block, int q, const std::string& text, const AnswerRules& r);

// Whether `text` names `name` as a whole name (not as a prefix of a longer one, e.g. int4-g64 in int4-g64-gptq),
// in any case ("Prefill" names "prefill").
bool names(const std::string& text, const std::string& name);
// Where `text` first names `name` that way (std::string::npos when it does not).
size_t first_named_at(const std::string& text, const std::string& name);

// `s` in lower case (ASCII): the form every match on words here compares.
std::string lower(const std::string& s);

// How much of `reference` (its runs of 8 words, any case) `text` repeats: 0 none, 1 all of it.
double copied_share(const std::string& text, const std::string& reference);

}  // namespace mqlab

// Energy per intelligence (experiments/27-mixed-epi): EPI = joules per token / accuracy, the
// accuracy-vs-J/token frontier of configurations measured in the same paired rounds, and the EPI-optimal one.
#pragma once
#include <string>
#include <vector>

namespace mqexp {

// A configuration as the frontier sees it: its (deterministic) accuracy and its J/token in each round, the
// rounds paired across configurations (round k of every point ran in the same interleaved round).
struct EpiPoint {
  std::string id;
  double accuracy = 0;
  std::vector<double> joules_per_token;  // (rounds)
  // Optional: the per-item answers behind the accuracy ('1' right, '0' wrong, '-' skipped; the same items in
  // the same order for every point). With them, accuracies compare by their paired interval, not their values.
  std::string answers{};
};

// J/token over accuracy; +infinity for an accuracy of 0. mq::Error for a negative or non-finite input.
double epi(double joules_per_token, double accuracy);

// The ids on the frontier, in input order: a configuration is off it when another is at least as accurate
// and cheaper beyond the paired interval (mq::energy::robust_paired_ratio's upper end below 1), or more accurate and
// no dearer on the paired point estimate. When both points carry answers of one length, "at least as accurate"
// means not below beyond the paired accuracy interval (intervals.h paired_difference: a difference inside it is
// a tie) and "more accurate" means above beyond it; otherwise the accuracies compare as numbers. mq::Error when
// the points' rounds differ in number (robust_paired_ratio's).
std::vector<std::string> epi_frontier(const std::vector<EpiPoint>& points);

// The id of the lowest mean J/token over accuracy (the first of equals); "" for no points.
std::string epi_optimal(const std::vector<EpiPoint>& points);

}  // namespace mqexp

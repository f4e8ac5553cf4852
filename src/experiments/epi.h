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
};

// J/token over accuracy; +infinity for an accuracy of 0. mq::Error for a negative or non-finite input.
double epi(double joules_per_token, double accuracy);

// The ids on the frontier, in input order: a configuration is off it when another is at least as accurate
// and cheaper beyond the paired interval (mq::energy::paired_ratio's upper end below 1), or more accurate and
// no dearer on the paired point estimate. mq::Error when the points' rounds differ in number (paired_ratio's).
std::vector<std::string> epi_frontier(const std::vector<EpiPoint>& points);

// The id of the lowest mean J/token over accuracy (the first of equals); "" for no points.
std::string epi_optimal(const std::vector<EpiPoint>& points);

}  // namespace mqexp

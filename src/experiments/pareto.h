// The lower-left Pareto frontier of (bytes, perplexity) points: the schemes no other scheme beats
// on both at once.
#pragma once
#include <utility>
#include <vector>

namespace mqexp {

// on[i] is true when no point j has x_j <= x_i and y_j <= y_i with one of them strict. Points
// with a non-finite coordinate (failed schemes) are never on it and never dominate.
std::vector<bool> pareto_frontier(const std::vector<std::pair<double, double>>& xy);

}  // namespace mqexp

#include "experiments/epi.h"

#include <cmath>
#include <limits>

#include <fmt/core.h>

#include "miniquant/energy/trial_stats.h"
#include "experiments/generalization_report.h"
#include "miniquant/error.h"

namespace mqexp {

double epi(double joules_per_token, double accuracy) {
  if (!std::isfinite(joules_per_token) || !std::isfinite(accuracy) || joules_per_token < 0 || accuracy < 0)
    throw mq::Error(fmt::format("epi: J/token {} and accuracy {} must be finite and >= 0", joules_per_token, accuracy));
  return accuracy > 0 ? joules_per_token / accuracy : std::numeric_limits<double>::infinity();
}

namespace {

// y against x in accuracy: -1 below, 0 a tie, +1 above; by the paired interval of their answers when both have
// them (of one length), else by value.
int accuracy_order(const EpiPoint& y, const EpiPoint& x) {
  if (!y.answers.empty() && y.answers.size() == x.answers.size()) {
    const PairedDifference d = pair_answer_strings(y.answers, x.answers);
    return d.high < 0 ? -1 : d.low > 0 ? 1 : 0;
  }
  return y.accuracy < x.accuracy ? -1 : y.accuracy > x.accuracy ? 1 : 0;
}

}  // namespace

std::vector<std::string> epi_frontier(const std::vector<EpiPoint>& points) {
  std::vector<std::string> out;
  for (const EpiPoint& x : points) {
    bool dominated = false;
    for (const EpiPoint& y : points) {
      if (y.id == x.id) continue;
      const mq::energy::Ratio r = mq::energy::robust_paired_ratio(y.joules_per_token, x.joules_per_token);  // y / x
      const int acc = accuracy_order(y, x);
      if ((acc >= 0 && r.high < 1) || (acc > 0 && r.ratio <= 1)) {
        dominated = true;
        break;
      }
    }
    if (!dominated) out.push_back(x.id);
  }
  return out;
}

std::string epi_optimal(const std::vector<EpiPoint>& points) {
  std::string best;
  double b = 0;
  for (const EpiPoint& p : points) {
    double sum = 0;
    for (double j : p.joules_per_token) sum += j;
    const double v = (p.joules_per_token.empty() ? 0.0 : sum / static_cast<double>(p.joules_per_token.size())) / p.accuracy;
    if (best.empty() || v < b) best = p.id, b = v;
  }
  return best;
}

}  // namespace mqexp

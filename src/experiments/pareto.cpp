#include "experiments/pareto.h"

#include <cmath>

namespace mqexp {

std::vector<bool> pareto_frontier(const std::vector<std::pair<double, double>>& xy) {
  const auto ok = [](const std::pair<double, double>& p) { return std::isfinite(p.first) && std::isfinite(p.second); };
  std::vector<bool> on(xy.size(), false);
  for (size_t i = 0; i < xy.size(); ++i) {
    if (!ok(xy[i])) continue;
    bool dominated = false;
    for (size_t j = 0; j < xy.size() && !dominated; ++j) {
      if (j == i || !ok(xy[j])) continue;
      const bool le = xy[j].first <= xy[i].first && xy[j].second <= xy[i].second;
      const bool lt = xy[j].first < xy[i].first || xy[j].second < xy[i].second;
      dominated = le && lt;
    }
    on[i] = !dominated;
  }
  return on;
}

}  // namespace mqexp

// Summary statistics of repeated trials: mean, sample standard deviation, median, extremes, the
// 95% confidence interval of the mean (Student t), Tukey outliers, and the ratio of two means
// with its interval (for savings against a baseline).
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

namespace mq::energy {

// Two-sided 95% quantile of Student's t with `df` degrees of freedom (df >= 1).
double t975(int df);

struct Summary {
  int n = 0;
  double mean = 0, sd = 0, median = 0, min = 0, max = 0;
  double ci_low = 0, ci_high = 0;  // 95% CI of the mean; equal to the mean when n < 2
  std::vector<int> outliers;       // indices outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR]
};
// mq::Error for an empty sample or a non-finite value.
Summary summarize_trials(const std::vector<double>& x);
nlohmann::json summary_json(const Summary& s);

// Ratio of means a/b with a 95% interval by the delta method (independent samples,
// df = min(n_a, n_b) - 1), and the saving 1 - ratio with its interval.
struct Ratio {
  double ratio = 0, low = 0, high = 0;
  double saving() const { return 1 - ratio; }
  double saving_low() const { return 1 - high; }
  double saving_high() const { return 1 - low; }
};
Ratio ratio_of_means(const Summary& a, const Summary& b);
nlohmann::json ratio_json(const Ratio& r);

}  // namespace mq::energy

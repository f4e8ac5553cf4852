// Summary statistics of repeated trials: mean, sample standard deviation, median, extremes, the
// 95% confidence interval of the mean (Student t), Tukey outliers, and the ratio of two means
// with its interval (for savings against a baseline).
#pragma once
#include <cstdint>
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

// Paired ratio of two configurations measured in the same interleaved rounds: a[k] and b[k] come from
// round k, so a drift of the machine's speed between rounds cancels in a[k] / b[k]. The ratio is the
// geometric mean of the per-round ratios, its 95% interval the Student t interval of their logs
// (df = rounds - 1), exponentiated. mq::Error when the sizes differ, there are fewer than 2 rounds, or a
// value is not finite and positive.
Ratio paired_ratio(const std::vector<double>& a, const std::vector<double>& b);

// The same comparison made robust to disturbed rounds (a competing process that slowed one configuration of
// a round drags a geometric mean; it cannot drag a median): the median of the per-round ratios with the
// distribution-free 95% interval of the sign test (the c-th smallest and c-th largest per-round ratio, c from
// Binomial(n, 1/2)). It assumes nothing of the ratios' distribution; up to half the rounds may be disturbed
// before the estimate follows them (a Hodges-Lehmann estimate, tried first, followed a disturbance that hit
// one side 17% of the time out of +-3%). Below 6 rounds no such interval reaches 95%, and it returns
// paired_ratio's. Errors as paired_ratio's.
Ratio robust_paired_ratio(const std::vector<double>& a, const std::vector<double>& b);
// The sign-test interval's rank c for n rounds at level 1 - alpha (0 when none exists: n < 6 at 0.05).
int sign_ci_rank(int n, double alpha = 0.05);
// Rounds a disturbance moved: indices whose log ratio log(a[k] / b[k]) lies more than k robust standard
// deviations (1.4826 x the median absolute deviation) from the median. Errors as paired_ratio's.
std::vector<int> disturbed_rounds(const std::vector<double>& a, const std::vector<double>& b, double k = 3.5);

// How stable a ranking is: `rounds` x `configs` values (lower is better, e.g. J/token), resampled by
// rounds with replacement `resamples` times (seeded). For each configuration the fraction of resamples in
// which its mean over the resampled rounds is the lowest; the observed winner's fraction says how often
// the top stays on top. mq::Error for an empty or ragged matrix.
std::vector<double> top_frequency(const std::vector<std::vector<double>>& rounds, int resamples = 2000, uint64_t seed = 42);

}  // namespace mq::energy

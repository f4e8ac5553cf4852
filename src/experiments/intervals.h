// Confidence intervals for the quality measures: Wilson score intervals for accuracies, means of
// per-item values with the variance clustered by group (tokens of one window, which are correlated),
// and empirical quantiles. Pure arithmetic on doubles, no model code.
#pragma once
#include <cstdint>
#include <vector>

namespace mqexp {

inline constexpr double kZ95 = 1.959963984540054;  // two-sided 95% normal quantile

struct Interval {
  double low = 0, high = 0;
};

// Wilson score interval of a proportion k / n (Wilson 1927; Newcombe 1998 method 3, no continuity
// correction). Unlike the Wald interval it stays inside [0, 1] and is not empty at k = 0 or k = n,
// which matters here: most schemes score 100%. n = 0 gives [0, 1].
Interval wilson(long long k, long long n, double z = kZ95);

// Two classifiers' accuracies on the same items (paired): `both` items both get right, `only_a` only A,
// `only_b` only B, `neither` neither. diff = acc(A) - acc(B) = (only_a - only_b) / n with Newcombe's
// (1998) method 10 interval (Wilson intervals of both proportions combined through the phi correlation
// of the 2x2 table, its positive part shrunk by n / 2 as Newcombe defines it; stays inside [-1, 1], not
// degenerate at 0 discordant items; Altman et al. 2000, Table 6.2: 0.122 in [0.011, 0.226]), and McNemar's exact
// two-sided p-value (the discordant items as Binomial(only_a + only_b, 1/2)). n = 0: diff 0 in [-1, 1], p 1.
struct PairedDifference {
  long long n = 0, only_a = 0, only_b = 0;
  double diff = 0, low = -1, high = 1;
  double p_value = 1;
};
PairedDifference paired_difference(long long both, long long only_a, long long only_b, long long neither, double z = kZ95);

// McNemar's exact two-sided p-value: P(X <= min(a, b)) * 2 for X ~ Binomial(a + b, 1/2), capped at 1.
double mcnemar_exact(long long a, long long b);

// A mean with its normal-approximation interval.
struct MeanInterval {
  double mean = 0, se = 0, low = 0, high = 0;
  long long n = 0;     // items
  long long groups = 0;  // clusters the variance was computed over
};

// Mean of items that come in groups (cluster g holds count[g] items whose values sum to sum[g]):
// mean = sum(sum) / sum(count), with the cluster-robust ("sandwich", CR1) variance of that ratio:
//   var = G / (G - 1) * sum_g (sum[g] - mean * count[g])^2 / (sum count)^2.
// Items inside a group may be correlated (the tokens of one perplexity window share their context and
// the model's state), so treating them as independent would understate the error; groups are taken as
// independent. With one item per group it is the usual s^2 / n. Groups with count 0 are ignored.
MeanInterval clustered_mean(const std::vector<double>& sum, const std::vector<long long>& count, double z = kZ95);

// Ratio of two sums over the same groups, R = sum(a) / sum(b): e.g. the mean KL of model A over model B's,
// both measured on the same test windows (a[g], b[g]: window g's KL sums, equal token counts), so the ratio is
// paired and the windows' shared difficulty cancels. Interval from the cluster-robust delta-method variance
//   var = G / (G - 1) * sum_g (a[g] - R b[g])^2 / (sum b)^2
// (clustered_mean's formula with b in place of the counts). `n` and `groups`: the groups. mq::UsageError when
// the sizes differ, there are none, a value is not finite, or sum(b) is not positive.
MeanInterval clustered_ratio(const std::vector<double>& a, const std::vector<double>& b, double z = kZ95);

// Mean of independent values (one item per group).
MeanInterval mean_interval(const std::vector<double>& values, double z = kZ95);

// The q-quantile (0 <= q <= 1) of values by linear interpolation between order statistics
// (Hyndman & Fan type 7, numpy's default). Throws mq::UsageError on an empty vector. Sorts a copy.
double quantile(std::vector<double> values, double q);

}  // namespace mqexp

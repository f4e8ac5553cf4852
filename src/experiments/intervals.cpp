// Wilson intervals, clustered means and quantiles (see intervals.h for the formulas and why).
#include "experiments/intervals.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "miniquant/error.h"

namespace mqexp {

Interval wilson(long long k, long long n, double z) {
  if (n < 0 || k < 0 || k > n) throw mq::UsageError(fmt::format("wilson: need 0 <= k <= n, got k={} n={}", k, n));
  if (n == 0) return {0.0, 1.0};
  const double nn = static_cast<double>(n), p = static_cast<double>(k) / nn, z2 = z * z;
  const double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
  const double half = z / (1 + z2 / nn) * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
  // At k = 0 (k = n) the bound is 0 (1) exactly; rounding must not put it a hair outside.
  return {k == 0 ? 0.0 : std::max(0.0, centre - half), k == n ? 1.0 : std::min(1.0, centre + half)};
}

double mcnemar_exact(long long a, long long b) {
  if (a < 0 || b < 0) throw mq::UsageError(fmt::format("mcnemar: negative counts {} and {}", a, b));
  const long long n = a + b, k = std::min(a, b);
  if (n == 0) return 1.0;
  // Sum the binomial tail in log space: n reaches thousands, where C(n, k) / 2^n underflows term by term.
  double tail = 0.0;
  const double ln2 = std::log(2.0);
  for (long long i = 0; i <= k; ++i)
    tail += std::exp(std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(i) + 1) -
                     std::lgamma(static_cast<double>(n - i) + 1) - static_cast<double>(n) * ln2);
  return std::min(1.0, 2.0 * tail);
}

PairedDifference paired_difference(long long both, long long only_a, long long only_b, long long neither, double z) {
  if (both < 0 || only_a < 0 || only_b < 0 || neither < 0)
    throw mq::UsageError(fmt::format("paired difference: negative cell counts {} {} {} {}", both, only_a, only_b, neither));
  PairedDifference r;
  r.n = both + only_a + only_b + neither;
  r.only_a = only_a;
  r.only_b = only_b;
  r.p_value = mcnemar_exact(only_a, only_b);
  if (r.n == 0) return r;
  const double n = static_cast<double>(r.n);
  const double pa = static_cast<double>(both + only_a) / n, pb = static_cast<double>(both + only_b) / n;
  r.diff = pa - pb;
  const Interval ia = wilson(both + only_a, r.n, z), ib = wilson(both + only_b, r.n, z);
  // phi of the 2x2 table (A right / wrong against B right / wrong) as Newcombe defines it for method 10: a
  // positive association shrunk by n / 2 (and kept at 0 below that), so the interval is not made too narrow
  // by chance agreement; 0 when a margin is empty.
  const double denom = static_cast<double>(both + only_a) * static_cast<double>(only_b + neither) *
                       static_cast<double>(both + only_b) * static_cast<double>(only_a + neither);
  const double assoc = static_cast<double>(both) * static_cast<double>(neither) - static_cast<double>(only_a) * static_cast<double>(only_b);
  const double shrunk = assoc > n / 2 ? assoc - n / 2 : assoc < 0 ? assoc : 0.0;
  const double phi = denom > 0 ? shrunk / std::sqrt(denom) : 0.0;
  const double da = pa - ia.low, ua = ia.high - pa, db = pb - ib.low, ub = ib.high - pb;
  const double lower = std::sqrt(std::max(0.0, da * da - 2 * phi * da * ub + ub * ub));
  const double upper = std::sqrt(std::max(0.0, ua * ua - 2 * phi * ua * db + db * db));
  r.low = std::max(-1.0, r.diff - lower);
  r.high = std::min(1.0, r.diff + upper);
  return r;
}

namespace {

// sum(a) / sum(b) over the groups given, with the CR1 variance G / (G - 1) sum_g (a[g] - R b[g])^2 / (sum b)^2:
// clustered_mean's and clustered_ratio's one formula. sum(b) > 0 (the callers check).
MeanInterval cr1_ratio(const std::vector<double>& a, const std::vector<double>& b, double z) {
  double sa = 0, sb = 0;
  for (size_t g = 0; g < a.size(); ++g) {
    sa += a[g];
    sb += b[g];
  }
  MeanInterval r;
  r.n = r.groups = static_cast<long long>(a.size());
  r.mean = sa / sb;
  if (r.groups > 1) {
    double ss = 0;
    for (size_t g = 0; g < a.size(); ++g) {
      const double e = a[g] - r.mean * b[g];
      ss += e * e;
    }
    const double G = static_cast<double>(r.groups);
    r.se = std::sqrt(G / (G - 1) * ss) / sb;
  }
  r.low = r.mean - z * r.se;
  r.high = r.mean + z * r.se;
  return r;
}

}  // namespace

MeanInterval clustered_mean(const std::vector<double>& sum, const std::vector<long long>& count, double z) {
  if (sum.size() != count.size())
    throw mq::UsageError(fmt::format("clustered_mean: {} sums but {} counts", sum.size(), count.size()));
  std::vector<double> a, b;  // the groups with items
  long long n = 0;
  for (size_t g = 0; g < sum.size(); ++g) {
    if (count[g] < 0) throw mq::UsageError("clustered_mean: negative count");
    if (count[g] == 0) continue;
    a.push_back(sum[g]);
    b.push_back(static_cast<double>(count[g]));
    n += count[g];
  }
  if (n == 0) return {};
  MeanInterval r = cr1_ratio(a, b, z);
  r.n = n;
  return r;
}

MeanInterval clustered_ratio(const std::vector<double>& a, const std::vector<double>& b, double z) {
  if (a.size() != b.size()) throw mq::UsageError(fmt::format("clustered_ratio: {} numerators but {} denominators", a.size(), b.size()));
  if (a.empty()) throw mq::UsageError("clustered_ratio of no groups");
  double sb = 0;
  for (size_t g = 0; g < a.size(); ++g) {
    if (!std::isfinite(a[g]) || !std::isfinite(b[g])) throw mq::UsageError(fmt::format("clustered_ratio: group {} is not finite", g));
    sb += b[g];
  }
  if (!(sb > 0)) throw mq::UsageError(fmt::format("clustered_ratio: the denominators sum to {}", sb));
  return cr1_ratio(a, b, z);
}

MeanInterval mean_interval(const std::vector<double>& values, double z) {
  return clustered_mean(values, std::vector<long long>(values.size(), 1), z);
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) throw mq::UsageError("quantile of no values");
  if (!(q >= 0 && q <= 1)) throw mq::UsageError(fmt::format("quantile: q = {} is outside [0, 1]", q));
  const double h = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end());
  const double a = v[lo];
  if (hi == lo) return a;
  const double b = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(lo) + 1, v.end());
  return a + (h - static_cast<double>(lo)) * (b - a);
}

}  // namespace mqexp

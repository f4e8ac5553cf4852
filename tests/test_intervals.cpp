// Interval arithmetic: Wilson intervals against published values, clustered means and ratios against their
// closed forms and in simulation, quantiles against numpy's default.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "experiments/intervals.h"
#include "miniquant/error.h"
#include "miniquant/random.h"

using namespace mqexp;

TEST_CASE("Wilson intervals match Newcombe (1998), Table I, method 3") {
  // Newcombe RG, "Two-sided confidence intervals for the single proportion: comparison of seven
  // methods", Stat Med 17:857-872 (1998): the score method without continuity correction.
  struct Case {
    long long k, n;
    double low, high;
  };
  for (const Case& c : {Case{81, 263, 0.2553, 0.3662}, Case{15, 148, 0.0624, 0.1605}, Case{0, 20, 0.0, 0.1611},
                        Case{1, 29, 0.0061, 0.1718}}) {
    CAPTURE(c.k);
    CAPTURE(c.n);
    const Interval w = wilson(c.k, c.n);
    CHECK(std::abs(w.low - c.low) <= 5.1e-5);  // the table prints 4 decimals
    CHECK(std::abs(w.high - c.high) <= 5.1e-5);
  }
  // The edges: all correct is [low, 1] with low < 1; no items is [0, 1]; bad counts are refused.
  const Interval all = wilson(7089, 7089);
  CHECK(all.high == 1.0);
  CHECK(all.low < 1.0);
  CHECK(all.low > 0.999);  // z^2 / (n + z^2) below 1: 1 - 3.84 / 7092.8 = 0.99946
  CHECK(all.low == doctest::Approx(7089.0 / (7089.0 + kZ95 * kZ95)).epsilon(1e-12));
  CHECK(wilson(0, 0).low == 0.0);
  CHECK(wilson(0, 0).high == 1.0);
  CHECK_THROWS_AS(wilson(3, 2), mq::UsageError);
  CHECK_THROWS_AS(wilson(-1, 2), mq::UsageError);
}

TEST_CASE("clustered mean: one item per group is the sample variance over n") {
  const std::vector<double> v{1.0, 2.0, 4.0, 7.0};
  const MeanInterval m = mean_interval(v);
  // mean 3.5, sample variance ((2.5^2 + 1.5^2 + 0.5^2 + 3.5^2) / 3) = 7, se = sqrt(7 / 4)
  CHECK(m.mean == doctest::Approx(3.5).epsilon(1e-15));
  CHECK(m.se == doctest::Approx(std::sqrt(7.0 / 4.0)).epsilon(1e-14));
  CHECK(m.low == doctest::Approx(3.5 - kZ95 * std::sqrt(7.0 / 4.0)).epsilon(1e-14));
  CHECK(m.n == 4);
  CHECK(m.groups == 4);
  CHECK(mean_interval({5.0}).se == 0.0);  // one group: no spread to measure
}

TEST_CASE("clustered mean: perfectly correlated items count as one per group") {
  // Group g holds m copies of v_g: the interval must be that of the G group values, not of G*m items.
  const std::vector<double> vals{0.3, -1.2, 2.5, 0.9, 1.1, -0.4};
  const long long m = 50;
  std::vector<double> sums;
  std::vector<long long> counts;
  std::vector<double> flat;
  for (double v : vals) {
    sums.push_back(static_cast<double>(m) * v);
    counts.push_back(m);
    for (long long i = 0; i < m; ++i) flat.push_back(v);
  }
  const MeanInterval c = clustered_mean(sums, counts), g = mean_interval(vals), naive = mean_interval(flat);
  CHECK(c.mean == doctest::Approx(g.mean).epsilon(1e-14));
  CHECK(c.se == doctest::Approx(g.se).epsilon(1e-12));
  CHECK(c.groups == 6);
  CHECK(c.n == 300);
  CHECK(naive.se < 0.2 * c.se);  // what ignoring the clusters would claim
  CHECK_THROWS_AS(clustered_mean({1.0}, {1, 2}), mq::UsageError);
}

TEST_CASE("paired differences with known variance: the interval's width and coverage") {
  // d = q - p per item, with p shared noise (sd 3) and q = p + N(0.1, 0.5^2): pairing removes p's
  // noise, so the se is 0.5 / sqrt(n), not sqrt(3^2 + 3^2 + 0.5^2) / sqrt(n).
  mq::Rng z(42);
  const int n = 4000, trials = 200;
  int covered = 0;
  double se_sum = 0;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> d(n);
    for (int i = 0; i < n; ++i) {
      const double p = 3.0 * z.normal();
      const double q = p + 0.1 + 0.5 * z.normal();
      d[static_cast<size_t>(i)] = q - p;
    }
    const MeanInterval m = mean_interval(d);
    covered += m.low <= 0.1 && 0.1 <= m.high;
    se_sum += m.se;
  }
  CHECK(se_sum / trials == doctest::Approx(0.5 / std::sqrt(n)).epsilon(0.02));
  // 95% nominal over 200 trials: binomial sd 3.1 trials; 181..199 is within 4 sd of 190.
  CHECK(covered >= 181);
  CHECK(covered <= 199);
}

TEST_CASE("clustered ratio: integer denominators are clustered_mean, and pairing removes the shared difficulty") {
  const std::vector<double> a{3.0, 5.5, 1.0, 8.25, 2.0};
  const std::vector<long long> n{2, 4, 1, 6, 3};
  const std::vector<double> b(n.begin(), n.end());
  const MeanInterval r = clustered_ratio(a, b), m = clustered_mean(a, n);
  CHECK(r.mean == doctest::Approx(m.mean).epsilon(1e-15));
  CHECK(r.se == doctest::Approx(m.se).epsilon(1e-14));
  CHECK(r.groups == 5);
  // a = 1.5 b exactly: the ratio has no spread at all.
  std::vector<double> a15;
  for (double v : b) a15.push_back(1.5 * v);
  const MeanInterval e = clustered_ratio(a15, b);
  CHECK(e.mean == doctest::Approx(1.5).epsilon(1e-15));
  CHECK(e.se == doctest::Approx(0.0).epsilon(1e-15));

  // Windows of very different difficulty w_g (lognormal, sd of log 1), model A's KL 1.2 w_g (1 + 0.05 e_A),
  // B's w_g (1 + 0.05 e_B): the paired ratio's interval covers 1.2 in about 95% of trials and is far narrower
  // than the unpaired one (the ratio of two independent means' intervals).
  mq::Rng z(42);
  const int windows = 800, trials = 200;
  int covered = 0;
  double width = 0, unpaired = 0;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> ka(windows), kb(windows);
    for (int g = 0; g < windows; ++g) {
      const double w = std::exp(z.normal());
      ka[static_cast<size_t>(g)] = 1.2 * w * (1 + 0.05 * z.normal());
      kb[static_cast<size_t>(g)] = w * (1 + 0.05 * z.normal());
    }
    const MeanInterval q = clustered_ratio(ka, kb);
    covered += q.low <= 1.2 && 1.2 <= q.high;
    width += q.high - q.low;
    const MeanInterval ma = mean_interval(ka), mb = mean_interval(kb);
    unpaired += 2 * kZ95 * q.mean * std::hypot(ma.se / ma.mean, mb.se / mb.mean);
  }
  CHECK(covered >= 181);  // 95% nominal over 200 trials, within 4 binomial sd
  CHECK(covered <= 199);
  CHECK(width < 0.1 * unpaired);
  CHECK_THROWS_AS(clustered_ratio({1.0}, {1.0, 2.0}), mq::UsageError);
  CHECK_THROWS_AS(clustered_ratio({}, {}), mq::UsageError);
  CHECK_THROWS_AS(clustered_ratio({1.0, 2.0}, {0.0, 0.0}), mq::UsageError);
  CHECK_THROWS_AS(clustered_ratio({NAN, 2.0}, {1.0, 1.0}), mq::UsageError);
}

TEST_CASE("quantiles interpolate like numpy's default") {
  CHECK(quantile({4.0, 1.0, 3.0, 2.0}, 0.5) == doctest::Approx(2.5));
  CHECK(quantile({4.0, 1.0, 3.0, 2.0}, 0.01) == doctest::Approx(1.03));
  CHECK(quantile({4.0, 1.0, 3.0, 2.0}, 0.99) == doctest::Approx(3.97));
  CHECK(quantile({4.0, 1.0, 3.0, 2.0}, 0.0) == 1.0);
  CHECK(quantile({4.0, 1.0, 3.0, 2.0}, 1.0) == 4.0);
  CHECK(quantile({7.0}, 0.3) == 7.0);
  CHECK_THROWS_AS(quantile({}, 0.5), mq::UsageError);
  CHECK_THROWS_AS(quantile({1.0}, 1.5), mq::UsageError);
}

#include "miniquant/energy/trial_stats.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "miniquant/error.h"

namespace mq::energy {
namespace {

// Quantile with linear interpolation between order statistics (type 7, as numpy's default).
double quantile(const std::vector<double>& sorted, double q) {
  const double h = (static_cast<double>(sorted.size()) - 1) * q;
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

double t975(int df) {
  if (df < 1) throw mq::Error(fmt::format("t975: {} degrees of freedom", df));
  static const double kTable[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                    2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                    2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df <= 30) return kTable[df - 1];
  // Cornish-Fisher expansion around the normal quantile; within 1e-3 of the exact value past 30.
  const double z = 1.959963985, v = df;
  return z + (z * z * z + z) / (4 * v) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * v * v);
}

Summary summarize_trials(const std::vector<double>& x) {
  if (x.empty()) throw mq::Error("summarize_trials: no values");
  for (double v : x)
    if (!std::isfinite(v)) throw mq::Error(fmt::format("summarize_trials: non-finite value {}", v));
  Summary s;
  s.n = static_cast<int>(x.size());
  std::vector<double> sorted = x;
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (double v : x) sum += v;
  s.mean = sum / s.n;
  double ss = 0;
  for (double v : x) ss += (v - s.mean) * (v - s.mean);
  s.sd = s.n > 1 ? std::sqrt(ss / (s.n - 1)) : 0.0;
  s.median = quantile(sorted, 0.5);
  s.min = sorted.front();
  s.max = sorted.back();
  const double half = s.n > 1 ? t975(s.n - 1) * s.sd / std::sqrt(static_cast<double>(s.n)) : 0.0;
  s.ci_low = s.mean - half;
  s.ci_high = s.mean + half;
  if (s.n >= 4) {
    const double q1 = quantile(sorted, 0.25), q3 = quantile(sorted, 0.75), iqr = q3 - q1;
    for (int i = 0; i < s.n; ++i)
      if (x[i] < q1 - 1.5 * iqr || x[i] > q3 + 1.5 * iqr) s.outliers.push_back(i);
  }
  return s;
}

nlohmann::json summary_json(const Summary& s) {
  return {{"n", s.n},           {"mean", s.mean},       {"sd", s.sd},           {"median", s.median},
          {"min", s.min},       {"max", s.max},         {"ci95_low", s.ci_low}, {"ci95_high", s.ci_high},
          {"outliers", s.outliers}};
}

Ratio ratio_of_means(const Summary& a, const Summary& b) {
  if (!(b.mean != 0)) throw mq::Error("ratio_of_means: baseline mean is 0");
  Ratio r;
  r.ratio = a.mean / b.mean;
  const double va = a.n > 0 ? a.sd * a.sd / a.n : 0, vb = b.n > 0 ? b.sd * b.sd / b.n : 0;
  const double rel = std::sqrt((a.mean != 0 ? va / (a.mean * a.mean) : 0) + vb / (b.mean * b.mean));
  const int df = std::min(a.n, b.n) - 1;
  const double half = df >= 1 ? t975(df) * std::abs(r.ratio) * rel : 0.0;
  r.low = r.ratio - half;
  r.high = r.ratio + half;
  return r;
}

namespace {
// The per-round log ratios log(a[k] / b[k]), checked as paired_ratio checks them.
std::vector<double> log_ratios(const char* who, const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw mq::Error(fmt::format("{}: {} against {} rounds", who, a.size(), b.size()));
  if (a.size() < 2) throw mq::Error(fmt::format("{}: {} rounds; need at least 2 for an interval", who, a.size()));
  std::vector<double> logs;
  for (size_t k = 0; k < a.size(); ++k) {
    if (!(std::isfinite(a[k]) && std::isfinite(b[k]) && a[k] > 0 && b[k] > 0))
      throw mq::Error(fmt::format("{}: round {} has {} and {}; values must be finite and positive", who, k, a[k], b[k]));
    logs.push_back(std::log(a[k] / b[k]));
  }
  return logs;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return quantile(v, 0.5);
}
}  // namespace

Ratio paired_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  const std::vector<double> logs = log_ratios("paired_ratio", a, b);
  // Logs make the interval symmetric for a ratio and its inverse: paired_ratio(b, a) is 1 / paired_ratio(a, b).
  const Summary s = summarize_trials(logs);
  return {std::exp(s.mean), std::exp(s.ci_low), std::exp(s.ci_high)};
}

int sign_ci_rank(int n, double alpha) {
  if (n < 1) return 0;
  // The sign test's null: each round's log ratio is above the median with probability 1/2, so the count below
  // it is Binomial(n, 1/2). The interval's lower end is the c-th smallest log ratio, c - 1 the largest k with
  // P(B <= k) <= alpha / 2 (its upper end the c-th largest); no such k below n = 6 at alpha = 0.05.
  const double log_half_n = static_cast<double>(n) * std::log(0.5);
  double cum = 0;
  int c = 0;
  for (int k = 0; k <= n; ++k) {
    const double term = std::exp(std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) + log_half_n);
    cum += term;
    if (cum > alpha / 2 * (1 + 1e-9)) break;
    c = k + 1;
  }
  return c;
}

Ratio robust_paired_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> logs = log_ratios("robust_paired_ratio", a, b);
  const int n = static_cast<int>(logs.size());
  const int c = sign_ci_rank(n);
  if (c == 0) return paired_ratio(a, b);  // too few rounds for a distribution-free 95% interval
  std::sort(logs.begin(), logs.end());
  return {std::exp(quantile(logs, 0.5)), std::exp(logs[static_cast<size_t>(c - 1)]), std::exp(logs[static_cast<size_t>(n - c)])};
}

std::vector<int> disturbed_rounds(const std::vector<double>& a, const std::vector<double>& b, double k) {
  const std::vector<double> logs = log_ratios("disturbed_rounds", a, b);
  const double med = median_of(logs);
  std::vector<double> dev;
  for (double x : logs) dev.push_back(std::abs(x - med));
  // 1.4826 x MAD estimates a normal sample's standard deviation; a floor keeps identical rounds unflagged.
  const double scale = std::max(1.4826 * median_of(dev), 1e-9);
  std::vector<int> out;
  for (size_t i = 0; i < logs.size(); ++i)
    if (dev[i] > k * scale) out.push_back(static_cast<int>(i));
  return out;
}

std::vector<double> top_frequency(const std::vector<std::vector<double>>& rounds, int resamples, uint64_t seed) {
  if (rounds.empty() || rounds.front().empty()) throw mq::Error("top_frequency: no rounds or no configurations");
  const size_t nc = rounds.front().size(), nr = rounds.size();
  for (const auto& r : rounds)
    if (r.size() != nc) throw mq::Error("top_frequency: rounds of different lengths");
  if (resamples < 1) throw mq::Error("top_frequency: need at least one resample");
  // splitmix64: a fixed, portable stream (std::uniform_int_distribution differs between standard libraries).
  uint64_t state = seed;
  const auto next = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  std::vector<double> wins(nc, 0.0), sum(nc);
  for (int it = 0; it < resamples; ++it) {
    std::fill(sum.begin(), sum.end(), 0.0);
    for (size_t k = 0; k < nr; ++k) {
      const auto& r = rounds[next() % nr];
      for (size_t c = 0; c < nc; ++c) sum[c] += r[c];
    }
    wins[static_cast<size_t>(std::min_element(sum.begin(), sum.end()) - sum.begin())] += 1;
  }
  for (double& w : wins) w /= resamples;
  return wins;
}

nlohmann::json ratio_json(const Ratio& r) {
  return {{"ratio", r.ratio},       {"ratio_ci95_low", r.low},         {"ratio_ci95_high", r.high},
          {"saving", r.saving()},   {"saving_ci95_low", r.saving_low()}, {"saving_ci95_high", r.saving_high()}};
}

}  // namespace mq::energy

// Central finite-difference gradient checking shared by the op and whole-model tests (double).
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace gradcheck {

// Step and tolerance: in double with h = 1e-5 the central difference has truncation error
// ~h^2 |f'''| / 6 ~ 1e-11 and round-off ~ 1e-16 |f| / h ~ 1e-10 for the O(1) losses used here,
// so 1e-6 (relative to max(1, |g|)) leaves four orders of margin while a wrong or missing term
// (which changes a gradient by O(1e-2) or more on these randomised inputs) fails by far.
inline constexpr double kStep = 1e-5;
inline constexpr double kTol = 1e-6;

struct Worst {
  double err = 0;
  size_t index = 0;
  double analytic = 0, numeric = 0;
};

// Perturbs every element of x in turn, calls loss(), restores it, compares to analytic.
inline Worst check(std::vector<double>& x, const std::vector<double>& analytic, const std::function<double()>& loss) {
  REQUIRE(x.size() == analytic.size());
  Worst w;
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + kStep;
    const double lp = loss();
    x[i] = saved - kStep;
    const double lm = loss();
    x[i] = saved;
    const double num = (lp - lm) / (2 * kStep);
    const double err = std::abs(num - analytic[i]) / std::max(1.0, std::abs(num));
    if (err > w.err || i == 0) w = {err, i, analytic[i], num};
  }
  return w;
}

inline void expect_close(const std::string& what, std::vector<double>& x, const std::vector<double>& analytic,
                         const std::function<double()>& loss) {
  const Worst w = check(x, analytic, loss);
  INFO(what << ": worst relative error " << w.err << " at element " << w.index << " (analytic " << w.analytic
            << ", numeric " << w.numeric << ")");
  CHECK(w.err < kTol);
  // A check over all-zero gradients would pass vacuously.
  double mx = 0;
  for (double g : analytic) mx = std::max(mx, std::abs(g));
  INFO(what << ": largest analytic gradient " << mx);
  CHECK(mx > 1e-3);
}

inline std::vector<double> randn(size_t n, std::mt19937_64& rng, double scale = 1.0) {
  std::vector<double> v(n);
  for (auto& x : v) {
    const double u1 = (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53;
    const double u2 = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    x = scale * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  return v;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace gradcheck

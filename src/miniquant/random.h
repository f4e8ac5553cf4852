// Seeded, portable random numbers: the same seed gives the same numbers with any standard library
// (std::normal_distribution and friends are implementation-defined, so they are not used).
#pragma once
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace mq {

class Rng {
 public:
  explicit Rng(uint64_t seed = 42) : gen_(seed) {}
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  // Standard normal by Box-Muller; the second value of each pair is kept for the next call.
  double normal() {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    double u1 = 0.0;
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * M_PI * u2);
    have_spare_ = true;
    return r * std::cos(2.0 * M_PI * u2);
  }
  // Uniform integer in [0, n), n > 0 (rejection sampling: no modulo bias).
  uint64_t below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x = gen_();
    while (x >= limit) x = gen_();
    return x % n;
  }

 private:
  std::mt19937_64 gen_;
  double spare_ = 0.0;
  bool have_spare_ = false;
};

// (rows x cols) row-major Gaussian matrix with standard deviation `stddev`.
inline std::vector<float> gaussian_matrix(int64_t rows, int64_t cols, uint64_t seed, double stddev = 1.0) {
  Rng rng(seed);
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (auto& v : w) v = static_cast<float>(stddev * rng.normal());
  return w;
}

}  // namespace mq

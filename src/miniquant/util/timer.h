// The one timer of the project: elapsed seconds, a timed-call loop (warm-up, repetitions, median and
// spread) and rates derived from it. Benchmarks, experiments and reports all measure through here.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

namespace mq {

// Seconds since `t0` on the monotonic clock.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Starts on construction; seconds() is the time since then.
class Stopwatch {
 public:
  Stopwatch() : t0_(std::chrono::steady_clock::now()) {}
  double seconds() const { return seconds_since(t0_); }
  void restart() { t0_ = std::chrono::steady_clock::now(); }

 private:
  std::chrono::steady_clock::time_point t0_;
};

// Seconds per call of a timed function: median of `reps` repetitions, each running the function
// enough times to last >= min_seconds (the first, untimed call is the warm-up).
struct Timing {
  double median = 0.0, min = 0.0, max = 0.0;  // seconds per call
  int reps = 0;                               // timed repetitions
  int64_t calls_per_rep = 0;                  // calls inside one repetition
  // Relative spread of the repetitions: (max - min) / median.
  double spread() const { return median > 0 ? (max - min) / median : 0.0; }
};
Timing time_call(const std::function<void()>& f, int reps = 7, double min_seconds = 0.02);
// Seconds per call of `calls` back-to-back calls of f, no warm-up: one repetition of time_call's loop, for
// callers that interleave two functions' repetitions themselves (calls >= 1).
double seconds_per_call(const std::function<void()>& f, int64_t calls);
// Median, fastest and slowest of per-call seconds measured by a caller's own loop (non-empty).
Timing summarize(std::vector<double> seconds_per_call, int64_t calls_per_rep);

// A rate (bytes/s or ops/s): work per call / seconds per call, for the median and for the extremes.
struct Rate {
  double median = 0.0, low = 0.0, high = 0.0;
  int reps = 0;
};
Rate rate_of(double work_per_call, const Timing& t);

}  // namespace mq

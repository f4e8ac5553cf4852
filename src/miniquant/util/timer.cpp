// The timed-call loop and its summaries.
#include "miniquant/util/timer.h"

#include <algorithm>

namespace mq {

Timing time_call(const std::function<void()>& f, int reps, double min_seconds) {
  f();  // warm-up: page faults, caches, thread start
  int64_t calls = 1;
  for (;;) {
    const Stopwatch sw;
    for (int64_t i = 0; i < calls; ++i) f();
    if (sw.seconds() >= min_seconds) break;
    calls *= 2;
  }
  std::vector<double> t;
  for (int k = 0; k < reps; ++k) t.push_back(seconds_per_call(f, calls));
  return summarize(std::move(t), calls);
}

double seconds_per_call(const std::function<void()>& f, int64_t calls) {
  const Stopwatch sw;
  for (int64_t i = 0; i < calls; ++i) f();
  return sw.seconds() / static_cast<double>(calls);
}

Timing summarize(std::vector<double> t, int64_t calls_per_rep) {
  std::sort(t.begin(), t.end());
  const size_t n = t.size();
  const double med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  return {med, t.front(), t.back(), static_cast<int>(n), calls_per_rep};
}

Rate rate_of(double work_per_call, const Timing& t) {
  return {work_per_call / t.median, work_per_call / t.max, work_per_call / t.min, t.reps};
}

}  // namespace mq

// Progress reporting: a redrawn bar on a terminal, plain lines when output goes to a log.
#pragma once
#include <cstdio>
#include <string>

#include <unistd.h>

#include <fmt/core.h>

namespace mqexp {

class Progress {
 public:
  // Plain lines are printed every `line_every` updates (and on the last one) when not on a terminal.
  explicit Progress(int line_every = 50) : tty_(isatty(fileno(stderr)) != 0), every_(line_every) {}

  // done/total units, a caption and the fields to show after the bar.
  void update(long done, long total, double elapsed_s, const std::string& fields) {
    const double frac = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
    const double eta = done > 0 ? elapsed_s * (1.0 - frac) / frac : 0.0;
    if (tty_) {
      constexpr int kWidth = 30;
      const int fill = static_cast<int>(frac * kWidth);
      fmt::print(stderr, "\r[{}{}] {:5.1f}% {} ETA {}   ", std::string(static_cast<size_t>(fill), '#'),
                 std::string(static_cast<size_t>(kWidth - fill), '.'), 100.0 * frac, fields, clock(eta));
      if (done >= total) fmt::print(stderr, "\n");
      std::fflush(stderr);
    } else if (done % every_ == 0 || done >= total) {
      fmt::print(stderr, "{}/{} {} elapsed {} ETA {}\n", done, total, fields, clock(elapsed_s), clock(eta));
    }
  }

  static std::string clock(double s) {
    const long t = static_cast<long>(s + 0.5);
    return fmt::format("{}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60);
  }

 private:
  bool tty_;
  int every_;
};

}  // namespace mqexp

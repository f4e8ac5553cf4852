// This machine's ceilings, measured: read bandwidth at a chosen working-set size (a STREAM-like
// sum) and peak arithmetic (fp32 FMA, int8 VNNI dot products, bf16 dot products), per thread count.
// Every figure is a median over repetitions after a warm-up, with its spread.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mq {

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
// Median, fastest and slowest of per-call seconds measured by a caller's own loop (non-empty).
Timing summarize(std::vector<double> seconds_per_call, int64_t calls_per_rep);

// A rate (bytes/s or ops/s): work per call / seconds per call, for the median and for the extremes.
struct Rate {
  double median = 0.0, low = 0.0, high = 0.0;
  int reps = 0;
};
Rate rate_of(double work_per_call, const Timing& t);

// Read bandwidth (bytes/s) summing a buffer of `bytes` with `threads` threads, each its own slice,
// several passes inside one parallel region so cache-resident sizes are not dominated by the fork.
Rate read_bandwidth(int64_t bytes, int threads);
// Peak rates (ops/s, a multiply-add counts 2) with `threads` threads on independent chains.
Rate fma_peak(int threads);            // fp32 FMA at the widest xsimd batch
Rate vnni_peak(int threads, int bits);  // vpdpbusd on 256- or 512-bit registers; 0 without VNNI
Rate bf16_peak(int threads);           // vdpbf16ps on 512-bit registers; 0 without AVX512-BF16
bool has_vnni_probe();
bool has_bf16_probe();

}  // namespace mq

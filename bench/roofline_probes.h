// Same-run ceilings for the kernel benchmarks: read bandwidth at a given working-set size (a
// STREAM-like sum) and peak fp32 FMA / int8 VNNI arithmetic, per thread count, cached per run.
#pragma once
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "miniquant/kernels/isa_x86.h"

namespace mqbench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Median of 7 timed repetitions of f(), each repeated until it lasts >= 20 ms; returns seconds per call.
template <class F>
double median_seconds(F&& f) {
  f();  // warm-up: page faults, caches, thread start
  int reps = 1;
  for (;;) {
    const double t0 = now_s();
    for (int i = 0; i < reps; ++i) f();
    if (now_s() - t0 > 0.02) break;
    reps *= 2;
  }
  std::vector<double> t;
  for (int k = 0; k < 7; ++k) {
    const double t0 = now_s();
    for (int i = 0; i < reps; ++i) f();
    t.push_back((now_s() - t0) / reps);
  }
  std::sort(t.begin(), t.end());
  return t[3];
}

// Read bandwidth (bytes/s) summing a buffer of `bytes` with `threads` threads (each its own slice,
// `passes` times inside one parallel region so small, cache-resident sizes are not dominated by the
// fork), 4 independent vector accumulators per thread so the adds never limit it. Cached per
// (bytes, threads).
inline double read_bandwidth(int64_t bytes, int threads) {
  static std::map<std::pair<int64_t, int>, double> cache;
  const auto key = std::make_pair(bytes, threads);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  using B = xsimd::batch<float>;
  constexpr int64_t kBlk = 4 * static_cast<int64_t>(B::size);
  const int64_t nblk = std::max<int64_t>(bytes / 4 / kBlk, threads);
  const int64_t passes = std::max<int64_t>(1, (int64_t{64} << 20) / (nblk * kBlk * 4));
  std::vector<float> buf(static_cast<size_t>(nblk * kBlk), 1.0f);
  volatile float sink = 0.0f;
  const double sec = median_seconds([&] {
#pragma omp parallel num_threads(threads)
    {
      const int id = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t lo = nblk * id / nt, hi = nblk * (id + 1) / nt;
      B a(0.0f), b(0.0f), c(0.0f), d(0.0f);
      for (int64_t pass = 0; pass < passes; ++pass)
        for (int64_t blk = lo; blk < hi; ++blk) {
          const float* p = buf.data() + blk * kBlk;
          a += B::load_unaligned(p);
          b += B::load_unaligned(p + B::size);
          c += B::load_unaligned(p + 2 * B::size);
          d += B::load_unaligned(p + 3 * B::size);
        }
      sink = sink + xsimd::hadd((a + b) + (c + d));
    }
  });
  return cache[key] = static_cast<double>(nblk * kBlk) * 4.0 * static_cast<double>(passes) / sec;
}

// Peak fp32 FMA rate (flop/s) with `threads` threads: 10 independent FMA chains per thread.
inline double fma_peak(int threads) {
  static std::map<int, double> cache;
  if (auto it = cache.find(threads); it != cache.end()) return it->second;
  using B = xsimd::batch<float>;
  constexpr int64_t kIters = 1 << 16;
  volatile float sink = 0.0f;
  const double sec = median_seconds([&] {
#pragma omp parallel num_threads(threads)
    {
      B acc[10];
      for (int k = 0; k < 10; ++k) acc[k] = B(static_cast<float>(k));
      const B m(0.999f), a(0.001f);
      for (int64_t i = 0; i < kIters; ++i)
        for (auto& v : acc) v = xsimd::fma(v, m, a);
      B s = acc[0];
      for (int k = 1; k < 10; ++k) s += acc[k];
      sink = sink + xsimd::hadd(s);
    }
  });
  return cache[threads] = static_cast<double>(threads) * kIters * 10 * 2 * B::size / sec;
}

// Peak int8 dot-product rate (ops/s, 2 per multiply-add) of vpdpbusd on 256-bit registers, the width
// the dynamic kernels use. 0 when the VNNI path is not compiled.
inline double vnni_peak(int threads) {
  if (mq::kdetail::kVnniProbeOpsPerIter == 0) return 0.0;
  static std::map<int, double> cache;
  if (auto it = cache.find(threads); it != cache.end()) return it->second;
  constexpr int64_t kIters = 1 << 16;
  volatile int32_t sink = 0;
  const double sec = median_seconds([&] {
#pragma omp parallel num_threads(threads)
    { sink = sink + mq::kdetail::vnni_peak_probe(kIters); }
  });
  return cache[threads] = static_cast<double>(threads) * kIters * mq::kdetail::kVnniProbeOpsPerIter / sec;
}

}  // namespace mqbench

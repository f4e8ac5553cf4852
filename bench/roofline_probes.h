// Same-run ceilings for the kernel benchmarks: the library's probes (miniquant/roofline.h), medians
// cached per (working-set size, threads) so each is measured once per run.
#pragma once
#include <cstdint>
#include <map>
#include <utility>

#include "miniquant/roofline.h"

namespace mqbench {

inline double read_bandwidth(int64_t bytes, int threads) {
  static std::map<std::pair<int64_t, int>, double> cache;
  const auto key = std::make_pair(bytes, threads);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  return cache[key] = mq::read_bandwidth(bytes, threads).median;
}

inline double fma_peak(int threads) {
  static std::map<int, double> cache;
  if (auto it = cache.find(threads); it != cache.end()) return it->second;
  return cache[threads] = mq::fma_peak(threads).median;
}

// 512-bit vpdpbusd, the width the dynamic kernels use; 0 without VNNI.
inline double vnni_peak(int threads) {
  static std::map<int, double> cache;
  if (auto it = cache.find(threads); it != cache.end()) return it->second;
  return cache[threads] = mq::vnni_peak(threads, 512).median;
}

}  // namespace mqbench

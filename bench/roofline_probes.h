// Same-run ceilings for the kernel benchmarks: the library's probes (miniquant/roofline.h), medians
// cached per (working-set size, threads) so each is measured once per run; and the cold mode's copy count.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <utility>

#include "miniquant/roofline.h"
#include "miniquant/util/sysinfo.h"

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

// Cold mode: how many copies of a `bytes`-sized tensor make every call read its weights from DRAM, as a
// real model's decode does (it reads every layer once per token, so no layer is in cache when its turn
// comes): at least 256 MiB and 8x the last-level cache, cycled through in order.
inline int64_t cold_copies(double bytes) {
  const int64_t llc = std::max(mq::cpu_info().cache_bytes(3), mq::cpu_info().cache_bytes(2));
  const double want = std::max(256.0 * (1 << 20), 8.0 * static_cast<double>(llc));
  return std::max<int64_t>(2, static_cast<int64_t>(std::ceil(want / bytes)));
}

}  // namespace mqbench

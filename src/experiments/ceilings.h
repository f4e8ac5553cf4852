// experiments/01-roofline: this machine's ceilings (peak arithmetic per datatype, read bandwidth
// per cache level) for 1 thread and all threads, and which ceiling bounds a measured point.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mqexp {

// 1 and all threads (omp_get_max_threads), the counts measured unless asked otherwise.
std::vector<int> default_ceiling_threads();

// Measures every ceiling for each thread count in `threads`; `on_step(done, total, caption)` is
// called before each probe. The JSON lists {"name","kind":"compute"|"bandwidth","threads",
// "unit","median","low","high","reps"} plus "level" and "working_set_bytes" for bandwidths.
nlohmann::json measure_ceilings(const std::vector<int>& threads,
                                const std::function<void(int, int, const std::string&)>& on_step);

// Checks that `ceilings` (read from `file`) has every field the functions here and the sweep read, with
// its type: mq::Error naming the file and the key otherwise (util/json_shape.h).
void check_ceilings(const nlohmann::json& ceilings, const std::string& file);

// The cache level a working set of `bytes` fits in with `threads` threads ("L1", "L2", "L3",
// "DRAM"), from the machine facts in ceilings.json (private levels scale with the threads).
std::string level_for(const nlohmann::json& ceilings, double bytes, int threads);

// The roofline bound of a point: min(peak of `compute` ("fp32"), intensity x bandwidth of the level
// its working set fits in), at the thread count measured closest to `threads`.
struct Bound {
  std::string ceiling;      // e.g. "L3 read bandwidth (2 threads)" or "fp32 FMA peak (2 threads)"
  std::string level;
  double attainable = 0;    // FLOP/s the ceiling allows at this intensity
  double bandwidth = 0;     // bytes/s of that level
};
Bound roofline_bound(const nlohmann::json& ceilings, double intensity, double working_set_bytes, int threads,
                     const std::string& compute = "fp32");

// How a fresh set of ceilings compares with a reference set (the ones the output folder held before the
// run: on a fresh clone, the committed run's). Two machines sold under the same CPU name have been 2x
// apart, so speeds from different runs are only comparable when this says so. Returns
// {"reference_date", "reference_cpu", "same_cpu", "ratios": [{"name","threads","ratio"}], "differs",
// "summary"}: `differs` when the CPU family / model differ or any common ceiling's median moved by more
// than `tolerance` (ratio outside [1 / (1 + tolerance), 1 + tolerance]).
nlohmann::json compare_ceilings(const nlohmann::json& now, const nlohmann::json& reference, double tolerance = 0.25);
// One sentence for terminals and READMEs when `cmp` (from compare_ceilings) differs; "" otherwise.
std::string ceilings_warning(const nlohmann::json& cmp);

}  // namespace mqexp

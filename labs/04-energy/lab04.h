// Lab 04: the functions you write, declared with the library's signatures (src/miniquant/energy/rapl.h,
// model.h, trial_stats.h; src/experiments/energy_phases.h) in namespace `lab`. The grader (`miniquant lab
// check 04`) compares each with the library's: your RAPL reader on powercap trees it lays out, your energy
// model on a hand-computed case, your phase tagging inside the real MiniGPT, your statistics on trials and on
// interleaved rounds; then your run of `miniquant energy` and your answers. Do not edit this header.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "experiments/energy_phases.h"
#include "miniquant/energy/meter.h"
#include "miniquant/energy/model.h"
#include "miniquant/energy/rapl.h"
#include "miniquant/energy/trial_stats.h"
#include "miniquant/util/sysinfo.h"
#include "minigpt/model.h"
#include "minigpt/tokenizer.h"

namespace lab {

// Block A. The microjoules a cumulative counter advanced from `before` to `after`, when it counts up to
// `max_range` and starts again at 0 (at most one wrap between two readings).
uint64_t counter_delta(uint64_t before, uint64_t after, uint64_t max_range);

// Block A. RAPL through the powercap sysfs tree under `root`: zones "intel-rapl:N" (packages, or "psys") and
// sub-zones "intel-rapl:N:M" (core, uncore, dram), each with `name`, `energy_uj`, `max_energy_range_uj`.
class RaplMeter final : public mq::energy::Meter {
 public:
  // Reads every zone; a zone whose files cannot be read or parsed is skipped (its reason in skipped()).
  // mq::Error when no zone that counts in the total is readable.
  explicit RaplMeter(const std::string& root);
  std::string source() const override;  // "rapl:package+dram" or "rapl:package"
  bool measured() const override { return true; }
  // Joules per zone since the meter was opened (unwrapped), the total of the zones that count, and seconds.
  // mq::Error naming the file when a counter becomes unreadable or is above its range.
  mq::energy::Reading read() override;
  const std::vector<mq::energy::RaplZone>& zones() const { return zones_; }
  const std::vector<std::string>& skipped() const { return skipped_; }

 private:
  std::string root_;
  std::vector<mq::energy::RaplZone> zones_;
  std::vector<std::string> skipped_;
  double t0_ = 0;
};

// Block B. The energy model: static watts x seconds + fp32 flops and int8 ops x their joules + bytes x the
// joules per byte of the level they come from, by term.
mq::energy::ModelBreakdown model_energy(const mq::energy::Coefficients& c, double seconds, const mq::energy::Work& w);
// Block B. The level (0 = L1 .. 3 = DRAM) a working set of `bytes` is read from with `threads` threads.
int level_for(const std::vector<mq::CacheLevel>& caches, double bytes, int threads);

// Block C. A greedy generation of `gen` tokens tagged by phase: the meter read at every boundary, each
// interval (and the work the model is told) added to prefill, decode or post; phases sum to the total.
mqexp::RunResult run_generation(minigpt::Model& m, mq::energy::Meter& meter, const std::vector<int32_t>& prompt, int gen,
                                const minigpt::Tokenizer* tok, const mqexp::WorkContext& w);

// Block D. Statistics of `trials` without its first `warmup` values: mean, sample sd, median, min, max, the
// 95% t interval of the mean, Tukey outliers (indices into the measured trials).
mq::energy::Summary summarize_trials(const std::vector<double>& trials, int warmup);
// Block D. a[k] / b[k] measured in the same round k: the geometric mean of the per-round ratios and the 95%
// t interval of their logs, exponentiated.
mq::energy::Ratio paired_ratio(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace lab

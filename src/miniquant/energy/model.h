// The energy model for machines without counters:
//   E = static_watts x seconds + sum over levels (bytes from that level x J/byte)
//       + fp32 flops x J/flop + int8 ops x J/op.
// Coefficients live in a JSON file with each one's cited source; calibrate() refits them by least
// squares from runs on a machine that has a real meter, so a calibrated file can be carried to
// machines without one.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "miniquant/energy/meter.h"
#include "miniquant/util/sysinfo.h"

namespace mq::energy {

struct Coefficients {
  double static_watts = 0;           // power drawn while running whatever the work (leakage, uncore, clocks)
  double joules_per_flop_fp32 = 0;
  double joules_per_op_int8 = 0;
  double joules_per_byte[kLevels] = {0, 0, 0, 0};  // L1, L2, L3, DRAM
  std::string file;                  // where they came from ("" when built in code)
  nlohmann::json sources;            // per coefficient: value as published, citation, how converted
  bool calibrated = false;           // fitted on this kind of machine from a real meter
};

// Loads and checks a coefficients file (mq::Error naming the file and field: missing, negative,
// not a number). Format: {"coefficients": {"static_watts": {"value": .., "source": ..}, ...}}.
Coefficients load_coefficients(const std::string& path);
inline constexpr size_t kMaxCoefficientsBytes = size_t{1} << 20;  // the shipped file is ~3 KB
// The same checks on JSON already parsed (`path` names it in messages); the fuzzer's entry point.
Coefficients coefficients_from_json(const nlohmann::json& j, const std::string& path);
nlohmann::json coefficients_json(const Coefficients& c);  // the same format, for a calibrated file

// Modelled energy by term: "static", "compute", "L1", "L2", "L3", "DRAM".
struct ModelBreakdown {
  double static_j = 0, compute_j = 0, level_j[kLevels] = {0, 0, 0, 0};
  double total() const { return static_j + compute_j + level_j[0] + level_j[1] + level_j[2] + level_j[3]; }
};
ModelBreakdown model_energy(const Coefficients& c, double seconds, const Work& w);

// The level a working set of `bytes` is read from with `threads` threads: the first data or
// unified cache that holds it (private caches count once per thread), else DRAM. Returns 0..3.
int level_for(const std::vector<CacheLevel>& caches, double bytes, int threads);

// One calibration run: what the model would be told, and what a real meter measured.
struct CalibrationSample {
  double seconds = 0;
  Work work;
  double joules = 0;
};
// Least-squares fit (Eigen, column-scaled) of every coefficient from >= 7 samples of different
// intensity; a column the samples never exercise keeps its prior value, a negative fit is clamped to 0
// and noted. mq::Error when there are too few samples.
struct Calibration {
  Coefficients fitted;
  double rms_relative_error = 0;      // of the fit over the samples
  std::vector<std::string> notes;
};
Calibration calibrate(const std::vector<CalibrationSample>& samples, const Coefficients& prior);

// The model as a meter: static power over the meter's clock plus the work reported by add_work.
class ModelMeter final : public Meter {
 public:
  explicit ModelMeter(Coefficients c);
  std::string source() const override { return "model:" + c_.file; }
  bool measured() const override { return false; }
  Reading read() override;
  void add_work(const Work& w) override { work_ += w; }
  const Coefficients& coefficients() const { return c_; }

 private:
  Coefficients c_;
  Work work_;
  double t0_ = 0;
};

}  // namespace mq::energy

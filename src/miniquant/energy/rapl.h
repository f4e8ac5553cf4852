// RAPL energy counters through the powercap sysfs tree (Intel, and AMD which Linux exposes the
// same way): zones <root>/intel-rapl:N (packages, "package-N", or "psys"), sub-zones
// intel-rapl:N:M ("core", "uncore", "dram"). Each zone's energy_uj is a cumulative microjoule
// counter that wraps at max_energy_range_uj; the reader unwraps it between readings.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "miniquant/energy/meter.h"

namespace mq::energy {

inline const std::string kPowercapRoot = "/sys/class/powercap";

struct RaplZone {
  std::string dir;        // "intel-rapl:0:1"
  std::string name;       // its `name` file: "package-0", "core", "dram", ...
  bool in_total = false;  // packages and dram count once; core / uncore are inside a package; psys overlaps all
  uint64_t max_range_uj = 0;
  uint64_t last_uj = 0;   // raw counter at the last reading
  double joules = 0;      // unwrapped since the meter was opened
};

// The zones under `root` and which could not be read (found in probe().skipped with the reason).
Probe probe_rapl(const std::string& root = kPowercapRoot);

// The readable zones under `root` (sorted by folder, each with its first raw reading) and the probe.
struct RaplScan {
  std::vector<RaplZone> zones;
  Probe probe;
};
RaplScan scan_rapl(const std::string& root);
// Reads every zone's counter once and adds its unwrapped advance since the zone's last reading: joules per
// zone since the scan and their total (`seconds` left 0: the caller's clock). mq::Error naming the file
// when a counter became unreadable, is not a number or is above its max_energy_range_uj.
Reading read_rapl(const std::string& root, std::vector<RaplZone>& zones);
// "rapl:package+dram" when a dram zone counts in the total, else "rapl:package".
std::string rapl_source(const std::vector<RaplZone>& zones);

// Unwrapped difference of a counter that counts up to max_range and starts again at 0.
uint64_t counter_delta(uint64_t before, uint64_t after, uint64_t max_range);

class RaplMeter final : public Meter {
 public:
  // mq::Error when no zone under `root` is readable, naming what was found and why it failed.
  explicit RaplMeter(const std::string& root = kPowercapRoot);
  std::string source() const override;  // "rapl:package+dram" or "rapl:package"
  bool measured() const override { return true; }
  Reading read() override;
  const std::vector<RaplZone>& zones() const { return zones_; }
  const Probe& probe() const { return probe_; }

 private:
  std::string root_;
  std::vector<RaplZone> zones_;
  Probe probe_;
  double t0_ = 0;
};

}  // namespace mq::energy

// The perf "power" PMU: <root>/type (the PMU's perf type number), <root>/cpumask (one CPU per
// package to open the counters on), and for each event events/<name> ("event=0x02"),
// events/<name>.scale (joules per count, e.g. 2.3283064365386962890625e-10) and events/<name>.unit
// ("Joules"). Counts are 64-bit and cumulative; reading them through perf_event_open needs
// perf_event_paranoid <= 0 or CAP_PERFMON.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "miniquant/energy/meter.h"

namespace mq::energy {

inline const std::string kPerfPowerRoot = "/sys/bus/event_source/devices/power";

struct PerfEvent {
  std::string name;    // "energy-pkg", "energy-ram", "energy-cores", ...
  uint64_t config = 0; // the event= term
  double scale = 0;    // joules per count (after unit conversion)
  std::string unit;    // as the .unit file says ("Joules")
};

struct PerfPowerPmu {
  int type = -1;
  std::vector<int> cpus;          // from cpumask ("0" or "0,18" or "0-1")
  std::vector<PerfEvent> events;  // the energy-* events with config, scale and unit parsed
  std::vector<std::string> skipped;  // events found but not usable, with the reason
};

// Parses the PMU's sysfs description; mq::Error naming the file when `root` or its type is missing
// or malformed. Events whose scale or unit cannot be read are listed in `skipped`.
PerfPowerPmu parse_perf_power(const std::string& root = kPerfPowerRoot);
// "event=0x02" or "event=0x2,umask=0x0" -> 2 (mq::Error otherwise).
uint64_t parse_event_config(const std::string& text, const std::string& what);
// "0", "0-3", "0,18" -> CPU list.
std::vector<int> parse_cpu_list(const std::string& text, const std::string& what);

// Whether the PMU is there and usable, opening the counters once to find out.
Probe probe_perf(const std::string& root = kPerfPowerRoot);

class PerfMeter final : public Meter {
 public:
  // Opens energy-pkg (required) and energy-ram (if listed) on each cpumask CPU; mq::Error with
  // the reason (missing PMU, permission denied: perf_event_paranoid) otherwise.
  explicit PerfMeter(const std::string& root = kPerfPowerRoot);
  ~PerfMeter() override;
  PerfMeter(const PerfMeter&) = delete;
  PerfMeter& operator=(const PerfMeter&) = delete;
  std::string source() const override;  // "perf:energy-pkg" or "perf:energy-pkg+energy-ram"
  bool measured() const override { return true; }
  Reading read() override;

 private:
  struct Counter {
    PerfEvent event;
    int cpu = 0;
    int fd = -1;
  };
  std::vector<Counter> counters_;
  double t0_ = 0;
};

}  // namespace mq::energy

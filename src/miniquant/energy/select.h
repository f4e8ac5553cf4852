// Choosing a meter at run time (--meter auto|rapl|perf|model) and recording what the machine
// offers: which meters were found, why the others were not, and the hardware facts every energy
// result carries.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "miniquant/energy/meter.h"

namespace mq::energy {

struct MeterRoots {
  std::string powercap = "/sys/class/powercap";
  std::string perf_power = "/sys/bus/event_source/devices/power";
  std::string coefficients;  // the model's coefficients file
};

struct Selection {
  std::unique_ptr<Meter> meter;
  std::vector<Probe> probes;  // rapl, perf, model: what was found and why not
  std::string warning;        // set when the model is used: its joules are estimates
};

// "auto": RAPL, else perf, else the model. "rapl" / "perf" / "model": that one or mq::Error saying
// why it is unavailable. Anything else: mq::UsageError.
Selection select_meter(const std::string& kind, const MeterRoots& roots);

// CPU model and flags, logical CPUs, threads in use, caches, frequency governor (or why not
// readable), kernel release, and the probes.
nlohmann::json hardware_json(const std::vector<Probe>& probes, int threads);

nlohmann::json probe_json(const Probe& p);

}  // namespace mq::energy

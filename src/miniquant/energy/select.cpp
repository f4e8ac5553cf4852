#include "miniquant/energy/select.h"

#include <sys/utsname.h>

#include <fmt/core.h>

#include "miniquant/energy/model.h"
#include "miniquant/energy/perf_power.h"
#include "miniquant/energy/rapl.h"
#include "miniquant/energy/sysfs.h"
#include "miniquant/error.h"
#include "miniquant/util/sysinfo.h"

namespace mq::energy {

Selection select_meter(const std::string& kind, const MeterRoots& roots) {
  if (kind != "auto" && kind != "rapl" && kind != "perf" && kind != "model")
    throw mq::UsageError(fmt::format("--meter {}: expected auto, rapl, perf or model", kind));
  Selection s;
  s.probes.push_back(probe_rapl(roots.powercap));
  s.probes.push_back(probe_perf(roots.perf_power));
  Probe model;
  model.meter = "model";
  Coefficients c;
  try {
    c = load_coefficients(roots.coefficients);
    model.available = true;
    model.zones = {"static", "compute", "L1", "L2", "L3", "DRAM"};
  } catch (const mq::Error& e) {
    model.reason = e.what();
  }
  s.probes.push_back(model);
  const Probe& rapl = s.probes[0];
  const Probe& perf = s.probes[1];
  if (kind == "rapl" || (kind == "auto" && rapl.available)) {
    if (!rapl.available) throw mq::Error("--meter rapl: " + rapl.reason);
    s.meter = std::make_unique<RaplMeter>(roots.powercap);
  } else if (kind == "perf" || (kind == "auto" && perf.available)) {
    if (!perf.available) throw mq::Error("--meter perf: " + perf.reason);
    s.meter = std::make_unique<PerfMeter>(roots.perf_power);
  } else {
    if (!model.available) throw mq::Error("--meter model: " + model.reason);
    s.meter = std::make_unique<ModelMeter>(c);
    s.warning = fmt::format(
        "no energy counters readable here (rapl: {}; perf: {}); every joule is MODELLED from time, bytes and "
        "operations with the coefficients in {}{}", rapl.reason.empty() ? "not chosen" : rapl.reason,
        perf.reason.empty() ? "not chosen" : perf.reason, c.file,
        c.calibrated ? " (calibrated)" : " (published per-operation energies, not calibrated on this CPU)");
  }
  return s;
}

nlohmann::json probe_json(const Probe& p) {
  return {{"meter", p.meter}, {"available", p.available}, {"reason", p.reason}, {"zones", p.zones}, {"skipped", p.skipped}};
}

nlohmann::json hardware_json(const std::vector<Probe>& probes, int threads) {
  const CpuInfo ci = cpu_info();
  nlohmann::json caches = nlohmann::json::array();
  for (const auto& c : ci.caches)
    caches.push_back({{"level", c.level}, {"type", c.type}, {"bytes", c.bytes}, {"shared_cpus", c.shared_cpus}});
  const SysfsValue gov = read_sysfs("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  utsname u{};
  const std::string kernel = uname(&u) == 0 ? fmt::format("{} {} {}", u.sysname, u.release, u.machine) : "unknown";
  nlohmann::json meters = nlohmann::json::array();
  for (const auto& p : probes) meters.push_back(probe_json(p));
  return {{"cpu_model", ci.model},
          {"cpu_flags", ci.flags},
          {"logical_cpus", ci.logical_cpus},
          {"threads_used", threads},
          {"caches", caches},
          {"governor", gov.ok ? nlohmann::json(gov.text) : nlohmann::json(nullptr)},
          {"governor_note", gov.ok ? "" : "cpufreq/scaling_governor " + gov.error},
          {"kernel", kernel},
          {"meters", meters}};
}

}  // namespace mq::energy

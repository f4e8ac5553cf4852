// Reads powercap RAPL zones. Since Linux 5.10 energy_uj is readable by root only (CVE-2020-8694),
// so "permission denied" is the usual reason a zone is skipped on a desktop.
#include "miniquant/energy/rapl.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/core.h>

#include "miniquant/energy/sysfs.h"
#include "miniquant/error.h"

namespace mq::energy {
namespace fs = std::filesystem;

namespace {

// "intel-rapl:0" and "intel-rapl:0:1" (a zone inside zone 0); not "intel-rapl" (the control type).
bool is_zone_dir(const std::string& n) { return n.rfind("intel-rapl:", 0) == 0; }

}  // namespace

RaplScan scan_rapl(const std::string& root) {
  RaplScan s;
  s.probe.meter = "rapl";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    s.probe.reason = fmt::format("{} missing (no powercap driver: no RAPL exposed, e.g. inside a VM)", root);
    return s;
  }
  std::vector<std::string> dirs;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (is_zone_dir(e.path().filename().string())) dirs.push_back(e.path().filename().string());
  std::sort(dirs.begin(), dirs.end());
  if (dirs.empty()) {
    s.probe.reason = fmt::format("{} has no intel-rapl:* zones", root);
    return s;
  }
  for (const auto& d : dirs) {
    const std::string base = root + "/" + d;
    RaplZone z;
    z.dir = d;
    const SysfsValue name = read_sysfs(base + "/name");
    z.name = name.ok ? name.text : d;
    const SysfsValue e = read_sysfs(base + "/energy_uj");
    const SysfsValue m = read_sysfs(base + "/max_energy_range_uj");
    if (!e.ok) {
      s.probe.skipped.push_back(fmt::format("{} ({}): energy_uj {}", d, z.name, e.error));
      continue;
    }
    if (!m.ok) {
      s.probe.skipped.push_back(fmt::format("{} ({}): max_energy_range_uj {}", d, z.name, m.error));
      continue;
    }
    try {
      z.last_uj = parse_u64(e.text, base + "/energy_uj");
      z.max_range_uj = parse_u64(m.text, base + "/max_energy_range_uj");
    } catch (const mq::Error& err) {
      s.probe.skipped.push_back(fmt::format("{} ({}): {}", d, z.name, err.what()));
      continue;
    }
    // Top-level zones are packages (or psys, the whole platform, which would double count);
    // sub-zones count only when they are dram, which a package's counter does not include.
    const bool sub = std::count(d.begin(), d.end(), ':') == 2;
    z.in_total = sub ? z.name == "dram" : z.name != "psys";
    s.probe.zones.push_back(z.name);
    s.zones.push_back(z);
  }
  s.probe.available = std::any_of(s.zones.begin(), s.zones.end(), [](const RaplZone& z) { return z.in_total; });
  if (!s.probe.available) {
    std::string why;
    for (const auto& k : s.probe.skipped) why += (why.empty() ? "" : "; ") + k;
    s.probe.reason = fmt::format("no readable package zone under {}{}{}", root, why.empty() ? "" : ": ", why);
  }
  return s;
}

uint64_t counter_delta(uint64_t before, uint64_t after, uint64_t max_range) {
  if (after >= before) return after - before;
  // Wrapped once: up to the top of the range, then from 0.
  return (max_range - before) + after;
}

Probe probe_rapl(const std::string& root) { return scan_rapl(root).probe; }

RaplMeter::RaplMeter(const std::string& root) : root_(root) {
  RaplScan s = scan_rapl(root);
  probe_ = s.probe;
  if (!probe_.available) throw mq::Error("rapl: " + probe_.reason);
  zones_ = std::move(s.zones);
  t0_ = now_seconds();
}

std::string rapl_source(const std::vector<RaplZone>& zones) {
  bool dram = false;
  for (const auto& z : zones) dram = dram || (z.name == "dram" && z.in_total);
  return dram ? "rapl:package+dram" : "rapl:package";
}

std::string RaplMeter::source() const { return rapl_source(zones_); }

Reading read_rapl(const std::string& root, std::vector<RaplZone>& zones) {
  Reading r;
  for (auto& z : zones) {
    const std::string path = root + "/" + z.dir + "/energy_uj";
    const SysfsValue v = read_sysfs(path);
    if (!v.ok) throw mq::Error(fmt::format("rapl: {} became unreadable mid-run: {}", path, v.error));
    const uint64_t now = parse_u64(v.text, path);
    if (now > z.max_range_uj && z.max_range_uj > 0)
      throw mq::Error(fmt::format("rapl: {} reads {} uJ, above its max_energy_range_uj {}", path, now, z.max_range_uj));
    z.joules += static_cast<double>(counter_delta(z.last_uj, now, z.max_range_uj)) * 1e-6;
    z.last_uj = now;
    r.joules[z.name] += z.joules;  // two sockets each have a "dram" sub-zone: the name's figure is their sum
    if (z.in_total) r.total += z.joules;
  }
  return r;
}

Reading RaplMeter::read() {
  Reading r = read_rapl(root_, zones_);
  r.seconds = now_seconds() - t0_;
  return r;
}

}  // namespace mq::energy

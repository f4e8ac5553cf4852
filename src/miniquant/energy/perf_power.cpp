#include "miniquant/energy/perf_power.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/core.h>

#include "miniquant/energy/sysfs.h"
#include "miniquant/error.h"

namespace mq::energy {
namespace fs = std::filesystem;

uint64_t parse_event_config(const std::string& text, const std::string& what) {
  // Comma-separated terms; only event= matters for the power PMU.
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string term = text.substr(pos, comma - pos);
    if (term.rfind("event=", 0) == 0) {
      const std::string v = term.substr(6);
      char* end = nullptr;
      errno = 0;
      const unsigned long long x = std::strtoull(v.c_str(), &end, 0);
      if (v.empty() || end != v.c_str() + v.size() || errno == ERANGE)
        throw mq::Error(fmt::format("{}: bad event term \"{}\"", what, term));
      return x;
    }
    pos = comma + 1;
  }
  throw mq::Error(fmt::format("{}: no event= term in \"{}\"", what, text));
}

std::vector<int> parse_cpu_list(const std::string& text, const std::string& what) {
  std::vector<int> cpus;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string part = text.substr(pos, comma - pos);
    const size_t dash = part.find('-');
    const auto num = [&](const std::string& s) {
      const uint64_t v = parse_u64(s, what);
      if (v > 65535) throw mq::Error(fmt::format("{}: CPU {} out of range", what, v));
      return static_cast<int>(v);
    };
    if (dash == std::string::npos) {
      cpus.push_back(num(part));
    } else {
      const int a = num(part.substr(0, dash)), b = num(part.substr(dash + 1));
      if (b < a) throw mq::Error(fmt::format("{}: bad range \"{}\"", what, part));
      for (int c = a; c <= b; ++c) cpus.push_back(c);
    }
    pos = comma + 1;
  }
  if (cpus.empty()) throw mq::Error(fmt::format("{}: empty CPU list", what));
  return cpus;
}

PerfPowerPmu parse_perf_power(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw mq::Error(fmt::format("{} missing (no perf power PMU: the kernel exposes no energy events here)", root));
  PerfPowerPmu p;
  const SysfsValue type = read_sysfs(root + "/type");
  if (!type.ok) throw mq::Error(fmt::format("{}/type: {}", root, type.error));
  const uint64_t t = parse_u64(type.text, root + "/type");
  if (t > 0x7fffffff) throw mq::Error(fmt::format("{}/type: {} out of range", root, t));
  p.type = static_cast<int>(t);
  const SysfsValue mask = read_sysfs(root + "/cpumask");
  p.cpus = mask.ok ? parse_cpu_list(mask.text, root + "/cpumask") : std::vector<int>{0};
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(root + "/events", ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("energy-", 0) == 0 && n.find('.') == std::string::npos) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    const std::string base = root + "/events/" + n;
    const SysfsValue ev = read_sysfs(base), sc = read_sysfs(base + ".scale"), un = read_sysfs(base + ".unit");
    if (!ev.ok || !sc.ok || !un.ok) {
      p.skipped.push_back(fmt::format("{}: {}", n, !ev.ok ? "event " + ev.error : !sc.ok ? ".scale " + sc.error : ".unit " + un.error));
      continue;
    }
    try {
      PerfEvent pe{n, parse_event_config(ev.text, base), parse_double(sc.text, base + ".scale"), un.text};
      if (pe.unit != "Joules") throw mq::Error(fmt::format("{}.unit: \"{}\" is not Joules", base, pe.unit));
      if (!(pe.scale > 0)) throw mq::Error(fmt::format("{}.scale: {} is not positive", base, pe.scale));
      p.events.push_back(pe);
    } catch (const mq::Error& e) {
      p.skipped.push_back(fmt::format("{}: {}", n, e.what()));
    }
  }
  return p;
}

namespace {

int open_counter(int type, uint64_t config, int cpu) {
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = static_cast<uint32_t>(type);
  a.config = config;
  // System-wide on one CPU of the package: pid -1, that cpu.
  return static_cast<int>(syscall(SYS_perf_event_open, &a, -1, cpu, -1, 0));
}

std::string open_error(int err) {
  if (err == EACCES || err == EPERM)
    return "permission denied (perf_event_paranoid > 0 and no CAP_PERFMON; try sysctl kernel.perf_event_paranoid=0)";
  return std::strerror(err);
}

}  // namespace

Probe probe_perf(const std::string& root) {
  Probe pr;
  pr.meter = "perf";
  try {
    PerfMeter m(root);
    pr.available = true;
    for (const auto& [zone, j] : m.read().joules) pr.zones.push_back(zone);
  } catch (const mq::Error& e) {
    pr.reason = e.what();
  }
  return pr;
}

PerfMeter::PerfMeter(const std::string& root) {
  const PerfPowerPmu pmu = parse_perf_power(root);
  const auto pkg = std::find_if(pmu.events.begin(), pmu.events.end(), [](const PerfEvent& e) { return e.name == "energy-pkg"; });
  if (pkg == pmu.events.end()) throw mq::Error(fmt::format("{}: no usable energy-pkg event", root));
  for (const auto& e : pmu.events) {
    if (e.name != "energy-pkg" && e.name != "energy-ram") continue;
    for (int cpu : pmu.cpus) {
      const int fd = open_counter(pmu.type, e.config, cpu);
      if (fd < 0) {
        const int err = errno;
        for (auto& c : counters_) ::close(c.fd);
        counters_.clear();
        throw mq::Error(fmt::format("perf_event_open({}, cpu {}): {}", e.name, cpu, open_error(err)));
      }
      counters_.push_back({e, cpu, fd});
    }
  }
  t0_ = now_seconds();
}

PerfMeter::~PerfMeter() {
  for (auto& c : counters_) ::close(c.fd);
}

std::string PerfMeter::source() const {
  bool ram = false;
  for (const auto& c : counters_) ram = ram || c.event.name == "energy-ram";
  return ram ? "perf:energy-pkg+energy-ram" : "perf:energy-pkg";
}

Reading PerfMeter::read() {
  Reading r;
  r.seconds = now_seconds() - t0_;
  for (const auto& c : counters_) {
    uint64_t count = 0;
    if (::read(c.fd, &count, sizeof count) != static_cast<ssize_t>(sizeof count))
      throw mq::Error(fmt::format("perf: reading {} on cpu {} failed: {}", c.event.name, c.cpu, std::strerror(errno)));
    // Counting started at open: the value is cumulative since the meter was made.
    const double j = static_cast<double>(count) * c.event.scale;
    r.joules[c.event.name] += j;
    r.total += j;  // energy-pkg and energy-ram do not overlap
  }
  return r;
}

}  // namespace mq::energy

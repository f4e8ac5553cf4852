// Energy meters behind one interface: a meter returns a cumulative reading (joules per zone since
// it was opened, and seconds); the difference of two readings taken at phase boundaries is the
// energy of the phase. Counters are cumulative, so no sampling thread is needed.
//
// Three meters: RAPL through powercap sysfs, the perf power PMU, and a model that charges
// static power x time plus the work the caller reports (add_work). Hardware meters ignore
// add_work; the model meter ignores nothing but never claims to be measured.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mq::energy {

// Memory levels the model charges bytes to, in order of distance from the core.
inline constexpr int kLevels = 4;
inline const char* const kLevelNames[kLevels] = {"L1", "L2", "L3", "DRAM"};

// Work done between two readings, as the model meter needs it.
struct Work {
  double flops_fp32 = 0;  // fp32 operations (a multiply-add counts 2)
  double ops_int8 = 0;    // int8 operations (a multiply-add counts 2), the +a8 kernels
  double bytes[kLevels] = {0, 0, 0, 0};  // bytes read or written, by the level they come from
  Work& operator+=(const Work& o);
  Work scaled(double k) const;
  double total_bytes() const { return bytes[0] + bytes[1] + bytes[2] + bytes[3]; }
};

// Cumulative state of a meter. `joules` holds every zone read; `total` the ones that add up
// without double counting (packages + dram; sub-zones such as core are inside their package).
struct Reading {
  double seconds = 0;
  std::map<std::string, double> joules;
  double total = 0;
};

// Energy of the interval between two readings: per zone, the total, and its length.
struct Interval {
  double seconds = 0;
  double joules = 0;
  std::map<std::string, double> zones;
};
Interval difference(const Reading& from, const Reading& to);

// What a probe found for one meter kind: available or not, and why not.
struct Probe {
  std::string meter;                 // "rapl", "perf", "model"
  bool available = false;
  std::string reason;                // why not (missing, permission denied, ...), or "" when available
  std::vector<std::string> zones;    // zones it reads ("package-0", "dram", ...)
  std::vector<std::string> skipped;  // zones found but not readable, each with its reason
};

class Meter {
 public:
  virtual ~Meter() = default;
  // "rapl:package+dram", "perf:energy-pkg", "model:<coefficients file>".
  virtual std::string source() const = 0;
  virtual bool measured() const = 0;  // false for the model
  virtual Reading read() = 0;         // mq::Error when a counter cannot be read mid-run
  // The model charges this work at its next reading; hardware meters see the real thing.
  virtual void add_work(const Work&) {}
};

// Monotonic seconds, the clock every meter stamps its readings with.
double now_seconds();

}  // namespace mq::energy

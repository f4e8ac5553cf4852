// Facts about this machine, this build and files on disk, for manifests: what ran, where, on what.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mq {

struct CacheLevel {
  int level = 0;
  std::string type;        // "Data", "Instruction", "Unified"
  int64_t bytes = 0;
  std::string shared_cpus;  // the logical CPUs sharing it, as the kernel lists them ("0-1")
};

struct CpuInfo {
  std::string model;                // /proc/cpuinfo "model name"
  // "cpu family", "model", "stepping": two CPUs sold under one model name (e.g. "AMD EPYC") can be
  // different generations with different ceilings; these tell them apart.
  int family = -1, model_number = -1, stepping = -1;
  std::string microcode;
  std::vector<std::string> flags;   // the SIMD flags that matter here (avx2, avx512*, fma, f16c, ...)
  std::vector<std::string> all_flags;  // every flag /proc/cpuinfo lists
  int logical_cpus = 0;
  std::vector<CacheLevel> caches;   // of CPU 0
  // Where `caches` came from: "sysfs", else "hwloc" (some VMs list no caches in sysfs), else "cpuid"
  // (x86 leaf 4 / 0x8000001D), else "none" (then every byte the energy model charges goes to DRAM, and
  // the manifests say so).
  std::string cache_source = "none";
  // Bytes of the data/unified cache at `level` (0 if unknown).
  int64_t cache_bytes(int level) const;
};
CpuInfo cpu_info();

// The cache levels of CPU 0 and their source, trying in order the sysfs tree under `sysfs_cpu0_cache`
// (normally /sys/devices/system/cpu/cpu0/cache), hwloc's topology, and the CPUID instruction. cpu_info()
// uses it; tests point it at a fake tree.
std::vector<CacheLevel> detect_caches(const std::string& sysfs_cpu0_cache, std::string* source);
// Each source alone (empty when it has nothing): for tests and for a manifest that compares them.
std::vector<CacheLevel> caches_from_sysfs(const std::string& sysfs_cpu0_cache);
std::vector<CacheLevel> caches_from_hwloc();
std::vector<CacheLevel> caches_from_cpuid();

// 1-, 5- and 15-minute load averages (/proc/loadavg; -1 when unreadable).
struct LoadAverage {
  double one = -1, five = -1, fifteen = -1;
};
LoadAverage load_average();
// True when the 1-minute load is above `threshold` runnable tasks: timings taken then are suspect.
inline bool machine_busy(const LoadAverage& l, double threshold) { return l.one > threshold; }

struct BuildInfo {
  std::string git_commit;  // the commit the binary was configured at
  std::string build_type;
  std::string flags;       // compile flags of this build
  std::string compiler;    // id, version
};
BuildInfo build_info();

// The source tree's HEAD commit and whether it has uncommitted changes outside experiments/ (whose
// outputs the experiments rewrite), asked of git at run time
// (empty commit when git or the repository is missing).
struct SourceState {
  std::string commit;
  bool dirty = false;
};
SourceState source_state(const std::string& dir);

// Runs `cmd` through /bin/sh and captures its standard output (append 2>&1 for its errors too).
// code: the exit status, or -1 when it could not start or did not exit normally.
struct CommandOutput {
  int code = -1;
  std::string out;
};
CommandOutput run_command(const std::string& cmd);

// Lower-case hex SHA-256 of a file (mq::Error when unreadable) or of bytes.
std::string sha256_file(const std::string& path);
std::string sha256_hex(const void* data, size_t n);
// Of the parts one after another, as if they were one buffer.
std::string sha256_hex(std::span<const std::string_view> parts);

// Current UTC time as ISO 8601 ("2026-11-21T08:12:00Z").
std::string utc_now_iso8601();

// This machine's host name (gethostname), "" when it cannot be read: which node of a cluster measured what.
std::string host_name();

}  // namespace mq

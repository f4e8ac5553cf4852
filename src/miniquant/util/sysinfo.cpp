#include "miniquant/util/sysinfo.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#ifdef MQ_HAVE_HWLOC
#include <hwloc.h>
#endif

#include <openssl/evp.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <ctime>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/core.h>

#include "miniquant/util/error.h"
#include "miniquant/util/io.h"

namespace mq {
namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\n");
  const auto e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// Files of /proc and of a sysfs tree (which a test, or a user, may point elsewhere): opened without blocking,
// regular files only, at most kSysfsBytes (util/io.h try_read_file); "" when unreadable, as a missing file.
constexpr size_t kSysfsBytes = 1 << 16;
std::string read_small(const std::string& path, size_t max_bytes = kSysfsBytes) {
  ReadResult r = try_read_file(path, max_bytes);
  return r.ok ? std::move(r.text) : std::string();
}

std::string read_line(const std::string& path) {
  const std::string s = read_small(path);
  return trim(s.substr(0, s.find('\n')));
}

// "48K" / "1024K" / "32M" -> bytes.
int64_t parse_size(const std::string& s) {
  if (s.empty()) return 0;
  int64_t v = 0;
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    if (v >= (int64_t{1} << 36)) return 0;  // a garbage size, not an overflow: << 20 below stays under 2^60
    v = v * 10 + (s[i++] - '0');
  }
  if (i < s.size() && (s[i] == 'K' || s[i] == 'k')) v <<= 10;
  if (i < s.size() && (s[i] == 'M' || s[i] == 'm')) v <<= 20;
  return v;
}

std::string hex(const unsigned char* md, unsigned len) {
  std::string h;
  for (unsigned i = 0; i < len; ++i) h += fmt::format("{:02x}", md[i]);
  return h;
}

}  // namespace

CommandOutput run_command(const std::string& cmd) {
  CommandOutput r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

int64_t CpuInfo::cache_bytes(int level) const {
  for (const auto& c : caches)
    if (c.level == level && c.type != "Instruction") return c.bytes;
  return 0;
}

CpuInfo cpu_info() {
  CpuInfo ci;
  ci.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  // /proc/cpuinfo holds a block per logical CPU: 4 MiB is room for about a thousand of them.
  std::istringstream f(read_small("/proc/cpuinfo", size_t{4} << 20));
  static const std::set<std::string> kWanted = {"sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni", "amx_bf16", "amx_int8"};
  for (std::string line; std::getline(f, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon)), val = trim(line.substr(colon + 1));
    if (key == "model name" && ci.model.empty()) ci.model = val;
    const auto number = [&](int& field) {
      if (field < 0 && !val.empty() && val.find_first_not_of("0123456789") == std::string::npos && val.size() < 9)
        field = std::stoi(val);
    };
    if (key == "cpu family") number(ci.family);
    if (key == "model") number(ci.model_number);
    if (key == "stepping") number(ci.stepping);
    if (key == "microcode" && ci.microcode.empty()) ci.microcode = val;
    if (key == "flags" && ci.all_flags.empty()) {
      std::istringstream is(val);
      for (std::string fl; is >> fl;) {
        ci.all_flags.push_back(fl);
        if (kWanted.count(fl) || fl.rfind("avx512", 0) == 0) ci.flags.push_back(fl);
      }
    }
  }
  ci.caches = detect_caches("/sys/devices/system/cpu/cpu0/cache", &ci.cache_source);
  return ci;
}

std::vector<CacheLevel> caches_from_sysfs(const std::string& root) {
  std::vector<CacheLevel> out;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = fmt::format("{}/index{}/", root, i);
    const std::string level = read_line(dir + "level");
    if (level.empty() || level.size() > 2 || level.find_first_not_of("0123456789") != std::string::npos) break;
    const int64_t bytes = parse_size(read_line(dir + "size"));
    if (bytes <= 0) continue;  // a level without a size tells the model nothing
    out.push_back({std::stoi(level), read_line(dir + "type"), bytes, read_line(dir + "shared_cpu_list")});
  }
  return out;
}

std::vector<CacheLevel> caches_from_hwloc() {
  std::vector<CacheLevel> out;
#ifdef MQ_HAVE_HWLOC
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return out;
  if (hwloc_topology_load(topo) == 0) {
    // The caches above PU 0, innermost first: the ones CPU 0 reads through.
    hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, 0);
    for (hwloc_obj_t o = pu ? pu->parent : nullptr; o; o = o->parent) {
      if (!hwloc_obj_type_is_cache(o->type) || !o->attr) continue;
      const auto& c = o->attr->cache;
      const char* type = c.type == HWLOC_OBJ_CACHE_DATA ? "Data" : c.type == HWLOC_OBJ_CACHE_INSTRUCTION ? "Instruction" : "Unified";
      char cpus[256] = "";
      if (o->cpuset) hwloc_bitmap_list_snprintf(cpus, sizeof cpus, o->cpuset);
      if (c.size > 0) out.push_back({static_cast<int>(c.depth), type, static_cast<int64_t>(c.size), cpus});
    }
  }
  hwloc_topology_destroy(topo);
#endif
  return out;
}

std::vector<CacheLevel> caches_from_cpuid() {
  std::vector<CacheLevel> out;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return out;
  const bool amd = b == 0x68747541;  // "Auth"enticAMD
  // Deterministic cache parameters: Intel leaf 4, AMD leaf 0x8000001D, the same register layout.
  const unsigned leaf = amd ? 0x8000001Du : 4u;
  if (amd && (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x8000001Du)) return out;
  if (!amd && a < 4) return out;
  for (unsigned i = 0; i < 8; ++i) {
    __cpuid_count(leaf, i, a, b, c, d);
    const unsigned type = a & 0x1f;
    if (type == 0) break;
    const int level = static_cast<int>((a >> 5) & 0x7);
    const int64_t ways = ((b >> 22) & 0x3ff) + 1, parts = ((b >> 12) & 0x3ff) + 1, line = (b & 0xfff) + 1, sets = int64_t{c} + 1;
    const char* t = type == 1 ? "Data" : type == 2 ? "Instruction" : "Unified";
    const unsigned sharing = ((a >> 14) & 0xfff) + 1;  // logical CPUs that may share it (an upper bound)
    out.push_back({level, t, ways * parts * line * sets, sharing > 1 ? fmt::format("0-{}", sharing - 1) : "0"});
  }
#endif
  return out;
}

std::vector<CacheLevel> detect_caches(const std::string& sysfs_cpu0_cache, std::string* source) {
  std::vector<CacheLevel> c = caches_from_sysfs(sysfs_cpu0_cache);
  std::string from = "sysfs";
  if (c.empty()) c = caches_from_hwloc(), from = "hwloc";
  if (c.empty()) c = caches_from_cpuid(), from = "cpuid";
  if (c.empty()) from = "none";
  if (source) *source = from;
  return c;
}

LoadAverage load_average() {
  LoadAverage l;
  std::istringstream f(read_small("/proc/loadavg"));
  if (!(f >> l.one >> l.five >> l.fifteen)) return {};
  return l;
}

BuildInfo build_info() {
  return {MQ_GIT_COMMIT, MQ_BUILD_TYPE, MQ_BUILD_FLAGS, MQ_COMPILER};
}

SourceState source_state(const std::string& dir) {
  SourceState s;
  s.commit = trim(run_command(fmt::format("git -C '{}' rev-parse HEAD 2>/dev/null", dir)).out);
  // Dirty = tracked sources changed; the experiments' own outputs (rewritten by the run asking) do not count.
  if (!s.commit.empty())
    s.dirty = !trim(run_command(fmt::format("git -C '{}' status --porcelain --untracked-files=no -- . ':(exclude)experiments' 2>/dev/null",
                                            dir)).out).empty();
  return s;
}

std::string sha256_hex(const void* data, size_t n) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md;
  unsigned int len = 0;
  if (EVP_Digest(data, n, md.data(), &len, EVP_sha256(), nullptr) != 1) throw Error("sha256: OpenSSL digest failed");
  return hex(md.data(), len);
}

std::string sha256_hex(std::span<const std::string_view> parts) {
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) throw Error("sha256: OpenSSL init failed");
  for (std::string_view p : parts)
    if (EVP_DigestUpdate(ctx.get(), p.data(), p.size()) != 1) throw Error("sha256: OpenSSL digest failed");
  std::array<unsigned char, EVP_MAX_MD_SIZE> md;
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md.data(), &len) != 1) throw Error("sha256: OpenSSL digest failed");
  return hex(md.data(), len);
}

std::string sha256_file(const std::string& path) {
  // A file the user names (a checkpoint, a lab's input): opened without blocking and checked on the descriptor to be
  // a regular file, so a FIFO in its place is an error, not a hang; then streamed (checkpoints are hundreds of MB).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw Error(fmt::format("sha256: cannot read {}: {}", path, errno_reason(errno)));
  std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* f) {
    ::close(*f);
    delete f;
  });
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw Error(fmt::format("sha256: cannot read {}: not a regular file (a FIFO, socket, device or folder)", path));
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) throw Error("sha256: OpenSSL init failed");
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(fmt::format("sha256: read error in {}: {}", path, errno_reason(errno)));
    if (n == 0) break;
    EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(n));
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> md;
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md.data(), &len);
  return hex(md.data(), len);
}

std::string utc_now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::array<char, 32> buf;
  std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf.data();
}

std::string host_name() {
  std::array<char, 256> buf{};  // HOST_NAME_MAX is 64 on Linux; the last byte stays 0 when it is cut
  if (gethostname(buf.data(), buf.size() - 1) != 0) return "";
  return buf.data();
}

}  // namespace mq

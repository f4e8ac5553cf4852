// Cache sizes for the roofline and the energy model, from sysfs, else hwloc, else CPUID (some VMs list no
// caches in sysfs): a fake sysfs tree is read as written, a missing one falls back with its source named,
// and the fallbacks agree with sysfs on this machine where sysfs has the sizes.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>

#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"
#include "miniquant/util/wait_policy.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

TEST_CASE("caches: a fake sysfs tree is read level by level; a missing tree falls back and says from where") {
  const std::string root = mqtest::temp_path("mq_test", "mq_fake_cache");
  fs::remove_all(root);
  const auto index = [&](int i, const char* level, const char* type, const char* size, const char* shared) {
    const std::string d = root + "/index" + std::to_string(i);
    fs::create_directories(d);
    mq::write_file_atomic(d + "/level", std::string(level) + "\n");
    mq::write_file_atomic(d + "/type", std::string(type) + "\n");
    mq::write_file_atomic(d + "/size", std::string(size) + "\n");
    mq::write_file_atomic(d + "/shared_cpu_list", std::string(shared) + "\n");
  };
  index(0, "1", "Data", "48K", "0");
  index(1, "1", "Instruction", "32K", "0");
  index(2, "2", "Unified", "2048K", "0");
  index(3, "3", "Unified", "32768K", "0-1");
  std::string src;
  const std::vector<mq::CacheLevel> c = mq::detect_caches(root, &src);
  CHECK(src == "sysfs");
  REQUIRE(c.size() == 4);
  CHECK(c[0].bytes == 48 << 10);
  CHECK(c[3].level == 3);
  CHECK(c[3].bytes == int64_t{32} << 20);
  CHECK(c[3].shared_cpus == "0-1");
  // A level with garbage for a size is left out, not read as 0 bytes; so is one whose size would overflow.
  index(2, "2", "Unified", "lots", "0");
  CHECK(mq::caches_from_sysfs(root).size() == 3);
  index(2, "2", "Unified", "99999999999999999999999K", "0");
  CHECK(mq::caches_from_sysfs(root).size() == 3);
  // A FIFO where a size is expected is not a file: read as missing, never waited on (this test would hang).
  fs::remove(root + "/index2/size");
  REQUIRE(::mkfifo((root + "/index2/size").c_str(), 0600) == 0);
  CHECK(mq::caches_from_sysfs(root).size() == 3);
  // sha256_file refuses it in one line the same way.
  CHECK_THROWS_WITH_AS(mq::sha256_file(root + "/index2/size"), doctest::Contains("not a regular file"), mq::Error);
  fs::remove_all(root);

  // No tree: hwloc or CPUID answers (on x86 at least CPUID does), and the source says which.
  const std::vector<mq::CacheLevel> f = mq::detect_caches(root + "/missing", &src);
  CHECK((src == "hwloc" || src == "cpuid" || src == "none"));
#if defined(__x86_64__)
  CHECK(src != "none");
  REQUIRE(!f.empty());
  bool l1d = false;
  for (const auto& x : f) l1d = l1d || (x.level == 1 && x.type == "Data" && x.bytes >= (16 << 10));
  CHECK(l1d);
#endif
}

TEST_CASE("caches: hwloc and CPUID agree with this machine's sysfs on the L1 data cache, where sysfs has it") {
  const std::vector<mq::CacheLevel> sys = mq::caches_from_sysfs("/sys/devices/system/cpu/cpu0/cache");
  int64_t l1 = 0;
  for (const auto& x : sys)
    if (x.level == 1 && x.type == "Data") l1 = x.bytes;
  if (l1 == 0) return;  // a VM without caches in sysfs: nothing to compare with
  for (const auto& other : {mq::caches_from_hwloc(), mq::caches_from_cpuid()})
    for (const auto& x : other)
      if (x.level == 1 && x.type == "Data") CHECK(x.bytes == l1);
}

TEST_CASE("wait policy: /proc/loadavg's running count is parsed whole or refused; this machine's is readable") {
  CHECK(mq::parse_running_entities("0.52 0.41 0.30 2/81 12345\n") == 2);
  CHECK(mq::parse_running_entities("7.00 6.10 5.00 13/402 99") == 13);
  CHECK(mq::parse_running_entities("0.52 0.41 0.30 /81 1") == -1);   // no digits
  CHECK(mq::parse_running_entities("0.52 0.41 0.30 2 81") == -1);    // no slash
  CHECK(mq::parse_running_entities("0.52 0.41") == -1);              // short line
  CHECK(mq::parse_running_entities("") == -1);
  // The reader counts itself once: never negative on a readable /proc; ctest may run other tests beside.
  const int others = mq::other_runnable_threads(3, 1);
  CHECK(others >= 0);
  CHECK(others < 4096);
}

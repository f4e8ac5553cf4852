#include "miniquant/energy/fake_powercap.h"

#include <filesystem>
#include <fstream>

#include "miniquant/error.h"

namespace mq::energy {

namespace fs = std::filesystem;

namespace {

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::trunc);
  f << text;
  if (!text.empty()) f << "\n";  // as sysfs prints them
  if (!f) throw Error(p.string() + ": cannot write the fake powercap file");
}

}  // namespace

void write_fake_powercap(const std::string& root) {
  const fs::path r(root);
  put(r / "intel-rapl" / "enabled", "1");
  put(r / "intel-rapl:0" / "name", "package-0");
  put(r / "intel-rapl:0" / "energy_uj", "1900000");
  put(r / "intel-rapl:0" / "max_energy_range_uj", "2000000");
  put(r / "intel-rapl:0:0" / "name", "core");
  put(r / "intel-rapl:0:0" / "energy_uj", "500000");
  put(r / "intel-rapl:0:0" / "max_energy_range_uj", "2000000");
  put(r / "intel-rapl:0:1" / "name", "dram");
  put(r / "intel-rapl:0:1" / "energy_uj", "300000");
  put(r / "intel-rapl:0:1" / "max_energy_range_uj", "1000000");
  put(r / "intel-rapl:1" / "name", "package-1");
  fs::create_directories(r / "intel-rapl:1" / "energy_uj");  // a folder where the counter should be
  put(r / "intel-rapl:1" / "max_energy_range_uj", "2000000");
  put(r / "intel-rapl:2" / "name", "package-2");
  put(r / "intel-rapl:2" / "energy_uj", "5");
  put(r / "intel-rapl:2" / "max_energy_range_uj", "lots");
  put(r / "intel-rapl:3" / "name", "package-3");
  put(r / "intel-rapl:3" / "energy_uj", "");  // empty
  put(r / "intel-rapl:3" / "max_energy_range_uj", "2000000");
  put(r / "intel-rapl:4" / "name", "psys");
  put(r / "intel-rapl:4" / "energy_uj", "10");
  put(r / "intel-rapl:4" / "max_energy_range_uj", "100000000");
}

}  // namespace mq::energy

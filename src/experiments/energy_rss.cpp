#include "experiments/energy_rss.h"

#include <fstream>
#include <string>

namespace mqexp {

void reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
}

double peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) * 1024.0;  // "VmHWM:  123456 kB"
  return 0;
}

}  // namespace mqexp

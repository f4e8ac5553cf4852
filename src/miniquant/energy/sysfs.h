// Small sysfs helpers shared by the meters: read a one-line file with the reason it failed, and
// parse the numbers sysfs prints.
#pragma once
#include <cstdint>
#include <string>

namespace mq::energy {

struct SysfsValue {
  bool ok = false;
  std::string text;   // the first line, trimmed
  std::string error;  // "missing", "permission denied", "empty", or strerror
};
SysfsValue read_sysfs(const std::string& path);

uint64_t parse_u64(const std::string& text, const std::string& what);  // mq::Error naming `what`
double parse_double(const std::string& text, const std::string& what);

}  // namespace mq::energy

#include "miniquant/energy/sysfs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/util/io.h"

namespace mq::energy {

SysfsValue read_sysfs(const std::string& path) {
  SysfsValue v;
  // The tree is the user's (--powercap-root, --perf-root): a FIFO or device there must neither block
  // nor be read without end, so the one bounded, non-blocking, regular-files-only reader of util/io.h.
  // A sysfs attribute is one short line; 4 KB is a page, sysfs's own limit.
  const mq::ReadResult r = mq::try_read_file(path, 4096);
  if (!r.ok) {
    v.error = r.error == "no such file or directory" ? "missing" : r.error;
    return v;
  }
  std::string s = r.text;
  const auto e = s.find_last_not_of(" \t\r\n");
  s = e == std::string::npos ? std::string() : s.substr(0, e + 1);
  const auto nl = s.find('\n');
  if (nl != std::string::npos) s.resize(nl);
  if (s.empty()) {
    v.error = "empty";
    return v;
  }
  v.ok = true;
  v.text = s;
  return v;
}

uint64_t parse_u64(const std::string& text, const std::string& what) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    throw mq::Error(fmt::format("{}: expected an unsigned integer, read \"{}\"", what, text));
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) throw mq::Error(fmt::format("{}: {} does not fit 64 bits", what, text));
  return v;
}

double parse_double(const std::string& text, const std::string& what) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !(v == v))
    throw mq::Error(fmt::format("{}: expected a number, read \"{}\"", what, text));
  return v;
}

}  // namespace mq::energy

#include "miniquant/energy/sysfs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/core.h>

#include "miniquant/error.h"

namespace mq::energy {

SysfsValue read_sysfs(const std::string& path) {
  SysfsValue v;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    v.error = errno == ENOENT ? "missing" : errno == EACCES ? "permission denied" : std::strerror(errno);
    return v;
  }
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  const int err = errno;
  ::close(fd);
  if (n < 0) {
    // sysfs may refuse at read time rather than open time.
    v.error = err == EACCES || err == EPERM ? "permission denied" : std::strerror(err);
    return v;
  }
  std::string s(buf, static_cast<size_t>(n));
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

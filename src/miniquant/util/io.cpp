// Whole-file reads and atomic writes.
#include "miniquant/util/io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/core.h>

#include "miniquant/error.h"

namespace mq {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(fmt::format("error reading '{}'", path));
  return ss.str();
}

void write_file_atomic(const std::string& path, std::span<const std::string_view> parts) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error(fmt::format("cannot write '{}': {}", tmp, std::strerror(errno)));
  auto fail = [&](const char* what) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    throw Error(fmt::format("cannot {} '{}': {}", what, tmp, why));
  };
  for (std::string_view bytes : parts) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("write");
      }
      done += static_cast<size_t>(n);
    }
  }
  if (::fsync(fd) != 0) fail("flush");
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw Error(fmt::format("cannot flush '{}': {}", tmp, std::strerror(errno)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw Error(fmt::format("cannot rename '{}' to '{}': {}", tmp, path, why));
  }
  // The rename itself must reach the disk too.
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace mq

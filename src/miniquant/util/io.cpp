// Whole-file reads and atomic writes.
#include "miniquant/util/io.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include "miniquant/error.h"

namespace mq {

std::string errno_reason(int err) {
  switch (err) {
    case EACCES:
    case EPERM: return "permission denied";
    case ENOENT: return "no such file or directory";
    case ENOTDIR: return "a component of the path is not a folder";
    case EISDIR: return "it is a folder";
    case EROFS: return "read-only file system";
    case ENOSPC: return "no space left on the device";
    // With SIGXFSZ ignored (tools/miniquant.cpp), a write past `ulimit -f` fails with EFBIG.
    case EFBIG: return "file too large (beyond the file-size limit, ulimit -f, or the file system's)";
    default: {
      std::string s = std::strerror(err);
      if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
      return s;
    }
  }
}

void check_input_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error(fmt::format("cannot read '{}': {}", path, errno_reason(errno)));
  if (S_ISDIR(st.st_mode)) throw Error(fmt::format("cannot read '{}': it is a folder, not a file", path));
  if (!S_ISREG(st.st_mode))
    throw Error(fmt::format("cannot read '{}': not a regular file (a FIFO, socket or device); give a file", path));
  if (::access(path.c_str(), R_OK) != 0) throw Error(fmt::format("cannot read '{}': {}", path, errno_reason(errno)));
}

void check_writable_output(const std::string& path) {
  if (path.empty()) throw Error("output path is empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw Error(fmt::format("cannot write '{}': it is a folder; give a file name", path));
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (::stat(dir.c_str(), &st) != 0)
    throw Error(fmt::format("cannot write '{}': folder '{}': {}", path, dir.string(), errno_reason(errno)));
  if (!S_ISDIR(st.st_mode)) throw Error(fmt::format("cannot write '{}': '{}' is not a folder", path, dir.string()));
  // A probe file tells permissions, read-only mounts and ACLs apart better than access(2).
  std::string probe = (dir / ".mq-write-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) throw Error(fmt::format("cannot write '{}': folder '{}': {}", path, dir.string(), errno_reason(errno)));
  ::close(fd);
  ::unlink(probe.c_str());
}

void check_not_an_input(const FlagPath& out, const std::vector<FlagPath>& inputs) {
  struct stat o {};
  const bool out_exists = ::stat(out.path.c_str(), &o) == 0;
  for (const FlagPath& in : inputs) {
    if (in.path.empty()) continue;
    struct stat i {};
    const bool in_exists = ::stat(in.path.c_str(), &i) == 0;
    bool same = false;
    if (out_exists && in_exists) {
      same = o.st_dev == i.st_dev && o.st_ino == i.st_ino;
    } else if (!out_exists && !in_exists) {
      // Two files still to be written (an output listed among the others): the same path, spelled any way.
      std::error_code e1, e2;
      const auto a = std::filesystem::weakly_canonical(out.path, e1), b = std::filesystem::weakly_canonical(in.path, e2);
      same = !e1 && !e2 && a == b;
    }
    if (same)
      throw UsageError(fmt::format("{} '{}' is the same file as {} '{}': writing it would replace {}; give another path", out.flag,
                                   out.path, in.flag, in.path, in_exists ? "an input" : "another output"));
  }
}

void check_folder_outputs(const std::string& flag, const std::string& dir, const std::vector<std::string>& names,
                          const std::vector<FlagPath>& inputs) {
  if (dir.empty()) throw UsageError(fmt::format("{} is empty: give the output folder", flag));
  for (const std::string& n : names) check_not_an_input({flag, (std::filesystem::path(dir) / n).string()}, inputs);
}

void check_output_file(const FlagPath& out, const std::vector<FlagPath>& inputs) {
  if (out.path.empty()) throw UsageError(fmt::format("{} is empty: give the file to write", out.flag));
  check_not_an_input(out, inputs);
  check_writable_output(out.path);
}

void check_writable_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("cannot create the output folder '{}': {}", dir, errno_reason(ec.value())));
  if (!std::filesystem::is_directory(dir, ec)) throw Error(fmt::format("output '{}' is not a folder", dir));
  check_writable_output((std::filesystem::path(dir) / "probe").string());
}

std::string read_file(const std::string& path) {
  check_input_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot open '{}': {}", path, errno_reason(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(fmt::format("error reading '{}'", path));
  return ss.str();
}

void write_file_atomic(const std::string& path, std::span<const std::string_view> parts) {
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());  // a stale temp file (a killed writer's) is garbage; a fresh one is made below
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error(fmt::format("cannot write '{}': {}", tmp, errno_reason(errno)));
  auto fail = [&](const char* what) {
    const std::string why = errno_reason(errno);
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

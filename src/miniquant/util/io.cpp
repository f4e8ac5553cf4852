// Whole-file reads and atomic writes.
#include "miniquant/util/io.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include "miniquant/util/error.h"

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

void check_regular_or_absent(const std::string& path) {
  // A device, FIFO or socket is not ours to replace: the rename at the end would put a regular file in
  // its place (as root, `--out /dev/null` would replace the system's device). stat follows links.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
    throw UsageError(fmt::format("cannot write '{}': it exists and is not a regular file (a device, FIFO or socket); give a new "
                                 "file or a regular one",
                                 path));
}

void check_writable_output(const std::string& path) {
  if (path.empty()) throw Error("output path is empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw Error(fmt::format("cannot write '{}': it is a folder; give a file name", path));
  check_regular_or_absent(path);
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

size_t utf8_error_offset(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte (overlongs and surrogates excluded)
    if (c < 0x80) n = 0;
    else if (c >= 0xC2 && c <= 0xDF) n = 1;
    else if (c == 0xE0) n = 2, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC) n = 2;
    else if (c == 0xED) n = 2, hi = 0x9F;
    else if (c >= 0xEE && c <= 0xEF) n = 2;
    else if (c == 0xF0) n = 3, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) n = 3;
    else if (c == 0xF4) n = 3, hi = 0x8F;
    else return i;
    if (n > 0 && i + n >= s.size()) return i;
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return i;
    }
    i += n + 1;
  }
  return std::string_view::npos;
}

void check_utf8_path(const FlagPath& p) {
  const size_t at = utf8_error_offset(p.path);
  if (at == std::string_view::npos) return;
  // The path itself is printed with its bad bytes escaped: the message is one readable line.
  std::string shown;
  for (size_t i = 0; i < p.path.size(); ++i) {
    const auto c = static_cast<unsigned char>(p.path[i]);
    shown += c >= 0x80 || c < 0x20 ? fmt::format("\\x{:02x}", c) : std::string(1, p.path[i]);
  }
  throw UsageError(fmt::format("{} '{}': byte 0x{:02x} at offset {} is not UTF-8, and the JSON outputs (results, manifest) "
                               "record this path; give a UTF-8 name",
                               p.flag, shown, static_cast<unsigned char>(p.path[at]), at));
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
    if (same && in_exists && S_ISDIR(i.st_mode))
      throw UsageError(fmt::format("{} '{}' is the same folder as {} '{}': writing into it would change an input; give another folder",
                                   out.flag, out.path, in.flag, in.path));
    if (same)
      throw UsageError(fmt::format("{} '{}' is the same file as {} '{}': writing it would replace {}; give another path", out.flag,
                                   out.path, in.flag, in.path, in_exists ? "an input" : "another output"));
  }
}

void check_folder_outputs(const std::string& flag, const std::string& dir, const std::vector<std::string>& names,
                          const std::vector<FlagPath>& inputs) {
  if (dir.empty()) throw UsageError(fmt::format("{} is empty: give the output folder", flag));
  // Before the work: the results and the manifest record these paths as JSON text.
  check_utf8_path({flag, dir});
  for (const FlagPath& in : inputs) check_utf8_path(in);
  // The folder itself: writing results into a folder the command reads (mixed's --configs or --runs)
  // spoils the next run over it. Same device and inode, like the files.
  check_not_an_input({flag, dir}, inputs);
  for (const std::string& n : names) {
    const std::string p = (std::filesystem::path(dir) / n).string();
    check_not_an_input({flag, p}, inputs);
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      throw UsageError(fmt::format("{} '{}': '{}' exists and is not a regular file; give another folder", flag, dir, p));
  }
}

void check_output_file(const FlagPath& out, const std::vector<FlagPath>& inputs) {
  if (out.path.empty()) throw UsageError(fmt::format("{} is empty: give the file to write", out.flag));
  check_utf8_path(out);
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

ReadResult try_read_file(const std::string& path, size_t max_bytes) {
  ReadResult r;
  // O_NONBLOCK: a FIFO planted where a file is expected (a powercap energy_uj, a runs/ unit) must not
  // block the open; fstat on the opened descriptor then refuses it, with no race against a swap.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    r.error = errno_reason(errno);
    return r;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    r.error = errno_reason(errno);
  } else if (S_ISDIR(st.st_mode)) {
    r.error = "it is a folder, not a file";
  } else if (!S_ISREG(st.st_mode)) {
    r.error = "not a regular file (a FIFO, socket or device); give a file";
  } else {
    // sysfs reports 4096 bytes for every attribute, so the size is a hint: read until end of file.
    char buf[1 << 16];
    for (;;) {
      const size_t want = std::min(sizeof buf, max_bytes - r.text.size() + 1);
      const ssize_t n = ::read(fd, buf, want);
      if (n < 0) {
        if (errno == EINTR) continue;
        r.error = errno_reason(errno);
        break;
      }
      if (n == 0) {
        r.ok = true;
        break;
      }
      r.text.append(buf, static_cast<size_t>(n));
      if (r.text.size() > max_bytes) {
        r.error = fmt::format("larger than {} bytes", max_bytes);
        break;
      }
    }
  }
  ::close(fd);
  if (!r.ok) r.text.clear();
  return r;
}

std::string read_file(const std::string& path, size_t max_bytes) {
  ReadResult r = try_read_file(path, max_bytes);
  if (!r.ok) throw Error(fmt::format("cannot read '{}': {}", path, r.error));
  return std::move(r.text);
}

void write_file_atomic(const std::string& path, std::span<const std::string_view> parts) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  // Checked again here, not only before the work: every writer goes through this function.
  check_regular_or_absent(path);
  // The temporary is created exclusively under a random name of our own (mkstemp: O_CREAT | O_EXCL),
  // hidden and in the same folder so the rename stays on one file system. A fixed name such as
  // `<path>.tmp` could be an input (`--model m.tmp --out m` deleted the model) or another user's file.
  std::string tmp = (dir / ("." + std::filesystem::path(path).filename().string() + ".mq-XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw Error(fmt::format("cannot write '{}': {}", path, errno_reason(errno)));
  // mkstemp makes the file 0600; an output gets the mode a plain create would give (0644 less the umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0644 & ~mask);
  auto fail = [&](const char* what) {
    const std::string why = errno_reason(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    throw Error(fmt::format("cannot {} '{}': {}", what, path, why));
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
    const std::string why = errno_reason(errno);
    ::unlink(tmp.c_str());
    throw Error(fmt::format("cannot flush '{}': {}", path, why));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_reason(errno);
    ::unlink(tmp.c_str());
    throw Error(fmt::format("cannot rename '{}' to '{}': {}", tmp, path, why));
  }
  // The rename itself must reach the disk too.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace mq

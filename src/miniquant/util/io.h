// File helpers: whole-file reads with clear errors, and atomic writes (temp file + fsync + rename)
// so a crash never leaves half a file behind.
#pragma once
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace mq {

std::string read_file(const std::string& path);  // throws mq::Error naming the path and the reason

// errno as a short lower-case reason: "permission denied", "no such file or directory", ...
std::string errno_reason(int err);
// Throws mq::Error "cannot read '<path>': <reason>" unless `path` is an existing regular file
// we may read. Checked with stat before any open, so a FIFO or device never blocks the reader.
void check_input_file(const std::string& path);
// Checks, before long work, that `path` can be written: its folder exists and accepts a new file
// (a probe file is created and removed) and `path` itself is not a folder. Throws mq::Error.
void check_writable_output(const std::string& path);
// The same for an output folder: creates it (with parents) if needed, then probes it.
void check_writable_dir(const std::string& dir);
// Writes the parts one after another into `path.tmp`, fsyncs it, renames it over `path` and
// fsyncs the directory, so the rename reaches the disk too. A stale `path.tmp` left by a killed
// writer is replaced; on any failure the temp file is removed and `path` is untouched. Parts avoid one big copy of large files.
void write_file_atomic(const std::string& path, std::span<const std::string_view> parts);
inline void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, std::span<const std::string_view>(&bytes, 1));
}

}  // namespace mq

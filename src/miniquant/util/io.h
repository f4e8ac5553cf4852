// File helpers: whole-file reads with clear errors, and atomic writes (temp file + fsync + rename)
// so a crash never leaves half a file behind.
#pragma once
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace mq {

std::string read_file(const std::string& path);  // throws mq::Error naming the path and the reason
// Writes the parts one after another into `path.tmp`, fsyncs it, renames it over `path` and
// fsyncs the directory, so the rename reaches the disk too. Parts avoid one big copy of large files.
void write_file_atomic(const std::string& path, std::span<const std::string_view> parts);
inline void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, std::span<const std::string_view>(&bytes, 1));
}

}  // namespace mq

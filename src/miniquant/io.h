// File helpers: whole-file reads with clear errors, and atomic writes (temp file + fsync + rename)
// so a crash never leaves half a file behind.
#pragma once
#include <string>
#include <string_view>

namespace mq {

std::string read_file(const std::string& path);  // throws mq::Error naming the path and the reason
void write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace mq

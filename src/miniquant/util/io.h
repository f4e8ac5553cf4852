// File helpers: whole-file reads with clear errors, and atomic writes (temp file + fsync + rename)
// so a crash never leaves half a file behind.
#pragma once
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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

// A path as the user gave it, with the flag it came from, for messages ("--model data/x.safetensors").
struct FlagPath {
  std::string flag, path;
};
// Refuses (mq::UsageError, exit 2: a bad flag) an output that is one of `inputs`: the same file by
// device and inode, so another spelling of the path or a hard link counts too. Writing it would
// replace what the command is reading. Empty input paths are skipped.
void check_not_an_input(const FlagPath& out, const std::vector<FlagPath>& inputs);
// The same for the files a command writes into its output folder `dir` (named by `flag`).
void check_folder_outputs(const std::string& flag, const std::string& dir, const std::vector<std::string>& names,
                          const std::vector<FlagPath>& inputs);
// The output file checks every writing command makes before its work: an empty path is refused
// (mq::UsageError), then check_not_an_input, then check_writable_output.
void check_output_file(const FlagPath& out, const std::vector<FlagPath>& inputs = {});
// Writes the parts one after another into `path.tmp`, fsyncs it, renames it over `path` and
// fsyncs the directory, so the rename reaches the disk too. A stale `path.tmp` left by a killed
// writer is replaced; on any failure the temp file is removed and `path` is untouched. Parts avoid one big copy of large files.
void write_file_atomic(const std::string& path, std::span<const std::string_view> parts);
inline void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, std::span<const std::string_view>(&bytes, 1));
}

}  // namespace mq

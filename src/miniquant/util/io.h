// File helpers: whole-file reads with clear errors (non-blocking, regular files only, bounded), and
// atomic writes (exclusive temp file + fsync + rename) so a crash never leaves half a file behind.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mq {

// A read of a file the user names, or of one in a tree the user names (powercap, perf, runs/): opened
// O_NONBLOCK so a FIFO never blocks, checked on the open descriptor (fstat) to be a regular file, and
// read to at most `max_bytes` (more is an error, not a truncation). ok, or the reason in lower case.
struct ReadResult {
  bool ok = false;
  std::string text, error;
};
inline constexpr size_t kNoReadLimit = static_cast<size_t>(-1) / 2;
ReadResult try_read_file(const std::string& path, size_t max_bytes);
// The same, throwing mq::Error "cannot read '<path>': <reason>".
std::string read_file(const std::string& path, size_t max_bytes = kNoReadLimit);

// errno as a short lower-case reason: "permission denied", "no such file or directory", ...
std::string errno_reason(int err);
// Throws mq::Error "cannot read '<path>': <reason>" unless `path` is an existing regular file
// we may read. Checked with stat before any open, so a FIFO or device never blocks the reader.
void check_input_file(const std::string& path);
// Checks, before long work, that `path` can be written: its folder exists and accepts a new file
// (a probe file is created and removed) and `path` itself is not a folder. Throws mq::Error.
// mq::UsageError when `path` exists (through links) as a device, FIFO or socket: not ours to replace.
void check_regular_or_absent(const std::string& path);
// check_writable_output also refuses such a path (check_regular_or_absent).
void check_writable_output(const std::string& path);
// The same for an output folder: creates it (with parents) if needed, then probes it.
void check_writable_dir(const std::string& dir);

// A path as the user gave it, with the flag it came from, for messages ("--model data/x.safetensors").
struct FlagPath {
  std::string flag, path;
};
// The offset of the first byte of `s` that is not valid UTF-8 (overlong forms and surrogates included),
// or npos. JSON text cannot hold such a byte: nlohmann::json's dump throws on it.
size_t utf8_error_offset(std::string_view s);
// Refuses (mq::UsageError) a path that is not valid UTF-8, naming the flag, the byte and its offset: checked
// before the work for every path a command records in its JSON outputs (check_output_file and
// check_folder_outputs call it for the output and the inputs).
void check_utf8_path(const FlagPath& p);
// Refuses (mq::UsageError, exit 2: a bad flag) an output that is one of `inputs`: the same file by
// device and inode, so another spelling of the path or a hard link counts too. Writing it would
// replace what the command is reading. Empty input paths are skipped.
void check_not_an_input(const FlagPath& out, const std::vector<FlagPath>& inputs);
// The same for the files a command writes into its output folder `dir` (named by `flag`); each that
// exists must be a regular file, and `dir` itself must not be one of `inputs` (a folder read).
void check_folder_outputs(const std::string& flag, const std::string& dir, const std::vector<std::string>& names,
                          const std::vector<FlagPath>& inputs);
// The output file checks every writing command makes before its work: an empty path is refused
// (mq::UsageError), then check_not_an_input, then check_writable_output.
void check_output_file(const FlagPath& out, const std::vector<FlagPath>& inputs = {});
// The one writer of every output: refuses an existing `path` that is not a regular file, writes the
// parts into a temporary created exclusively under a random name of its own (`.<name>.mq-XXXXXX`,
// mkstemp) in the same folder, fsyncs it, renames it over `path` and fsyncs the folder. No fixed name
// is ever unlinked (a `<path>.tmp` may be an input); on any failure the temporary is removed and
// `path` is untouched. Parts avoid one big copy of large files.
void write_file_atomic(const std::string& path, std::span<const std::string_view> parts);
inline void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, std::span<const std::string_view>(&bytes, 1));
}

}  // namespace mq

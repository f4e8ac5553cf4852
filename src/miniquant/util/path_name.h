// Names that come from a file or a flag and become part of a path (a config_id names a result
// file, a method names a trial folder): one check, so such a name can never leave its folder.
#pragma once
#include <string>
#include <string_view>

namespace mq {

// Longest name accepted: the longest ids the project makes are phase splits naming a stored recipe per phase
// (~70 characters, "int4-g64-gptq[prefill=int8-per-channel-gptq+a8,decode=int4-g64-gptq+bf16]"); 96 leaves
// room and keeps paths far below any file system's 255-byte component limit.
inline constexpr size_t kMaxPathName = 96;

// "" when `name` may be one path component: 1..kMaxPathName characters of [A-Za-z0-9._+-] and the phase
// split's []=, (none is a separator or special to the file system), not
// starting with '.' (no "..", no hidden files) or '-' (never read as an option). Else the reason.
std::string path_name_problem(std::string_view name);
// Throws mq::UsageError "<what> "<name>" cannot name a file: <reason>" (exit 2: a bad value, like a
// bad flag) unless path_name_problem(name) is "".
void check_path_name(std::string_view name, std::string_view what);

}  // namespace mq
